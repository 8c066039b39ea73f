package lockplugin_test

import (
	"errors"
	"fmt"
	"testing"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/internal/dryrun"
	"github.com/lockplugin/lockplugin/internal/version"
)

// verBook is a versioned model for the root package's tests.
type verBook struct {
	ID    uint
	Title string
	lockplugin.Version
}

func verOpen(t *testing.T, dialect string) *gorm.DB {
	t.Helper()
	db, err := dryrun.Open(dialect, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Use(lockplugin.New()); err != nil {
		t.Fatal(err)
	}
	return db
}

// The root names are the version package's.
func TestVersionReexports(t *testing.T) {
	if lockplugin.ErrConcurrency != version.ErrConcurrency {
		t.Error("ErrConcurrency differs from version.ErrConcurrency")
	}
	var err error = &lockplugin.ConcurrencyError{Op: "update", Table: "t", Version: 1, Current: 2}
	if !errors.Is(fmt.Errorf("wrapped: %w", err), lockplugin.ErrConcurrency) {
		t.Error("a ConcurrencyError is not ErrConcurrency")
	}
	var v lockplugin.Version = 3
	if version.Version(v) != 3 {
		t.Error("Version is not version.Version")
	}
}

// lockplugin.New installs the guard: one statement, guarded and bumping,
// on every dialect lockplugin renders for.
func TestPluginGuardsSave(t *testing.T) {
	want := map[string]string{
		"postgres":  `UPDATE "ver_books" SET "title"=$1,"version"=COALESCE("ver_books"."version", 0) + 1 WHERE "id" = $2 AND "ver_books"."version" = $3`,
		"mysql":     "UPDATE `ver_books` SET `title`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE `id` = ? AND `ver_books`.`version` = ?",
		"sqlserver": `UPDATE [ver_books] SET [title]=@p1,[version]=COALESCE([ver_books].[version], 0) + 1 WHERE [id] = @p2 AND [ver_books].[version] = @p3`,
		"oracle":    `UPDATE "ver_books" SET "title"=:1,"version"=COALESCE("ver_books"."version", 0) + 1 WHERE "id" = :2 AND "ver_books"."version" = :3`,
		"sqlite":    `UPDATE "ver_books" SET "title"=?,"version"=COALESCE("ver_books"."version", 0) + 1 WHERE "id" = ? AND "ver_books"."version" = ?`,
	}
	for dialect, w := range want {
		db := verOpen(t, dialect)
		tx := db.Table("ver_books").Save(&verBook{ID: 4, Title: "t", Version: 9})
		if tx.Error != nil {
			t.Fatalf("%s: %v", dialect, tx.Error)
		}
		if got := tx.Statement.SQL.String(); got != w {
			t.Errorf("%s:\n got: %s\nwant: %s", dialect, got, w)
		}
		if got := fmt.Sprint(tx.Statement.Vars); got != "[t 4 9]" {
			t.Errorf("%s vars: %s", dialect, got)
		}
	}
}

func TestSkipVersionCheckDropsTheGuardOnly(t *testing.T) {
	db := verOpen(t, "postgres")
	tx := db.Clauses(lockplugin.SkipVersionCheck()).Table("ver_books").Delete(&verBook{ID: 4, Version: 9})
	if got, want := tx.Statement.SQL.String(), `DELETE FROM "ver_books" WHERE "ver_books"."id" = $1`; got != want {
		t.Errorf("\n got: %s\nwant: %s", got, want)
	}
}
