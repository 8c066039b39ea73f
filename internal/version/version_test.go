package version_test

import (
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/internal/dryrun"
	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/internal/version"
)

type Book struct {
	ID    uint
	Title string
	version.Version
}

type SoftBook struct {
	ID    uint
	Title string
	version.Version
	DeletedAt gorm.DeletedAt
}

type Invoice struct {
	ID     uint
	Amount int
	Rev    version.Version `gorm:"column:lock_version"`
}

// Review belongs to a versioned Book: the Book field must stay a
// relationship, not become a column.
type Review struct {
	ID     uint
	BookID uint
	Book   Book
}

// open returns a DryRun *gorm.DB over the stand-in dialector, with the
// version callbacks registered unless bare.
func open(t *testing.T, dialect string, bare bool) *gorm.DB {
	t.Helper()
	db, err := dryrun.Open(dialect, "")
	if err != nil {
		t.Fatal(err)
	}
	db.Config.NowFunc = func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }
	if !bare {
		if err := version.Register(db, version.Config{}); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func sqlOf(tx *gorm.DB) string {
	if tx.Error != nil {
		return "error: " + tx.Error.Error()
	}
	return tx.Statement.SQL.String() + " " + fmt.Sprint(tx.Statement.Vars)
}

func TestSQL(t *testing.T) {
	cases := []struct {
		name string
		run  func(db *gorm.DB) *gorm.DB
		want map[string]string
	}{
		{
			name: "Save",
			run:  func(db *gorm.DB) *gorm.DB { return db.Save(&Book{ID: 7, Title: "t", Version: 2}) },
			want: map[string]string{
				"postgres":  `UPDATE "books" SET "title"=$1,"version"=COALESCE("books"."version", 0) + 1 WHERE "id" = $2 AND "books"."version" = $3 [t 7 2]`,
				"mysql":     "UPDATE `books` SET `title`=?,`version`=COALESCE(`books`.`version`, 0) + 1 WHERE `id` = ? AND `books`.`version` = ? [t 7 2]",
				"sqlserver": `UPDATE [books] SET [title]=@p1,[version]=COALESCE([books].[version], 0) + 1 WHERE [id] = @p2 AND [books].[version] = @p3 [t 7 2]`,
				"oracle":    `UPDATE "books" SET "title"=:1,"version"=COALESCE("books"."version", 0) + 1 WHERE "id" = :2 AND "books"."version" = :3 [t 7 2]`,
				"sqlite":    `UPDATE "books" SET "title"=?,"version"=COALESCE("books"."version", 0) + 1 WHERE "id" = ? AND "books"."version" = ? [t 7 2]`,
			},
		},
		{
			// The map's version is the same as the Model's (a different one
			// is refused before any SQL, see TestTwoVersionsRefused).
			name: "Updates map, named column",
			run: func(db *gorm.DB) *gorm.DB {
				return db.Model(&Invoice{ID: 7, Rev: 2}).Updates(map[string]any{"amount": 5, "lock_version": 2})
			},
			want: map[string]string{
				"postgres": `UPDATE "invoices" SET "amount"=$1,"lock_version"=COALESCE("invoices"."lock_version", 0) + 1 WHERE "id" = $2 AND "invoices"."lock_version" = $3 [5 7 2]`,
				"oracle":   `UPDATE "invoices" SET "amount"=:1,"lock_version"=COALESCE("invoices"."lock_version", 0) + 1 WHERE "id" = :2 AND "invoices"."lock_version" = :3 [5 7 2]`,
			},
		},
		{
			name: "Delete",
			run:  func(db *gorm.DB) *gorm.DB { return db.Delete(&Book{ID: 7, Version: 2}) },
			want: map[string]string{
				"postgres": `DELETE FROM "books" WHERE "books"."version" = $1 AND "books"."id" = $2 [2 7]`,
				"oracle":   `DELETE FROM "books" WHERE "books"."version" = :1 AND "books"."id" = :2 [2 7]`,
			},
		},
		{
			name: "soft Delete",
			run:  func(db *gorm.DB) *gorm.DB { return db.Delete(&SoftBook{ID: 7, Version: 2}) },
			want: map[string]string{
				"postgres": `UPDATE "soft_books" SET "deleted_at"=$1,"version"=COALESCE("soft_books"."version", 0) + 1 WHERE "soft_books"."version" = $2 AND "soft_books"."id" = $3 AND "soft_books"."deleted_at" IS NULL [2025-01-02 03:04:05 +0000 UTC 2 7]`,
			},
		},
		{
			name: "not loaded",
			run: func(db *gorm.DB) *gorm.DB {
				return db.Model(&Book{}).Where("title = ?", "x").Update("title", "y")
			},
			want: map[string]string{
				"postgres": `UPDATE "books" SET "title"=$1,"version"=COALESCE("books"."version", 0) + 1 WHERE title = $2 [y x]`,
			},
		},
		{
			name: "version without primary key is not loaded",
			run: func(db *gorm.DB) *gorm.DB {
				return db.Model(&Book{Version: 3}).Update("title", "y")
			},
			want: map[string]string{
				"postgres": "error: WHERE conditions required",
			},
		},
		{
			name: "SkipVersionCheck",
			run: func(db *gorm.DB) *gorm.DB {
				return db.Clauses(version.SkipVersionCheck()).Model(&Book{ID: 7, Version: 2}).Update("title", "y")
			},
			want: map[string]string{
				"postgres": `UPDATE "books" SET "title"=$1,"version"=COALESCE("books"."version", 0) + 1 WHERE "id" = $2 [y 7]`,
			},
		},
		{
			name: "upsert",
			run: func(db *gorm.DB) *gorm.DB {
				return db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&Book{ID: 7, Title: "t"})
			},
			want: map[string]string{
				// The version moves only when a column changes, so that an
				// upsert that changes nothing leaves it alone.
				"postgres": `INSERT INTO "books" ("title","version","id") VALUES ($1,$2,$3) ON CONFLICT ("id") DO UPDATE SET "version"=CASE WHEN "books"."title" IS NOT DISTINCT FROM "excluded"."title" THEN "books"."version" ELSE COALESCE("books"."version", 0) + 1 END,"title"="excluded"."title" [t 1 7]`,
			},
		},
		{
			name: "Create",
			run:  func(db *gorm.DB) *gorm.DB { return db.Create(&[]Book{{Title: "a"}, {Title: "b", Version: 5}}) },
			want: map[string]string{
				"postgres": `INSERT INTO "books" ("title","version") VALUES ($1,$2),($3,$4) [a 1 b 5]`,
			},
		},
	}
	for _, c := range cases {
		for dialect, want := range c.want {
			t.Run(c.name+"/"+dialect, func(t *testing.T) {
				if got := sqlOf(c.run(open(t, dialect, false))); got != want {
					t.Errorf("\n got: %s\nwant: %s", got, want)
				}
			})
		}
	}
}

// DryRun leaves the model alone: nothing was written.
func TestDryRunKeepsVersion(t *testing.T) {
	db := open(t, "postgres", false)
	b := Book{ID: 7, Title: "t", Version: 2}
	if err := db.Save(&b).Error; err != nil {
		t.Fatal(err)
	}
	if b.Version != 2 {
		t.Errorf("version %d after a DryRun Save, want 2", b.Version)
	}
}

func TestNotRegistered(t *testing.T) {
	db := open(t, "postgres", true)
	for name, tx := range map[string]*gorm.DB{
		"create": db.Create(&Book{Title: "x"}),
		"update": db.Save(&Book{ID: 1, Title: "x", Version: 1}),
		"delete": db.Delete(&Book{ID: 1, Version: 1}),
	} {
		if !errors.Is(tx.Error, plugin.ErrNotRegistered) {
			t.Errorf("%s: got %v, want ErrNotRegistered", name, tx.Error)
		}
		if !strings.Contains(tx.Error.Error(), name+" of Book") {
			t.Errorf("%s: %q does not name the operation and the model", name, tx.Error)
		}
	}
	// A model without a version is none of the plugin's business.
	type Plain struct {
		ID    uint
		Title string
	}
	if err := db.Save(&Plain{ID: 1, Title: "x"}).Error; err != nil {
		t.Errorf("unversioned model: %v", err)
	}
}

func TestBadModels(t *testing.T) {
	type TwoVersions struct {
		ID uint
		A  version.Version
		B  version.Version
	}
	type PointerVersion struct {
		ID uint
		V  *version.Version
	}
	db := open(t, "postgres", false)
	if err := db.Save(&TwoVersions{ID: 1, A: 1}).Error; err == nil || !strings.Contains(err.Error(), "two version fields") {
		t.Errorf("two version fields: got %v", err)
	}
	v := version.Version(1)
	if err := db.Save(&PointerVersion{ID: 1, V: &v}).Error; err == nil || !strings.Contains(err.Error(), "not a pointer") {
		t.Errorf("pointer version: got %v", err)
	}
	if err := db.Create(Book{Title: "by value"}).Error; !errors.Is(err, gorm.ErrInvalidValue) {
		t.Errorf("create by value: got %v", err)
	}
}

// Embedding a Version adds no Scan, Value or MarshalJSON method to the
// model: GORM keeps treating it as a struct, and JSON keeps its fields.
func TestEmbeddingKeepsTheModelAStruct(t *testing.T) {
	var b any = &Book{}
	if _, ok := b.(driver.Valuer); ok {
		t.Error("*Book is a driver.Valuer")
	}
	if _, ok := b.(sql.Scanner); ok {
		t.Error("*Book is a sql.Scanner")
	}
	if _, ok := b.(json.Marshaler); ok {
		t.Error("*Book is a json.Marshaler")
	}

	out, err := json.Marshal(Book{ID: 1, Title: "t", Version: 3})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"ID":1,"Title":"t","Version":3}` {
		t.Errorf("JSON %s", out)
	}
	var back Book
	if err := json.Unmarshal(out, &back); err != nil || back.Version != 3 {
		t.Errorf("unmarshal: %v %+v", err, back)
	}

	db := open(t, "postgres", false)
	if got, want := sqlOf(db.Where(&Book{Title: "t"}).Find(&[]Book{})),
		`SELECT * FROM "books" WHERE "books"."title" = $1 [t]`; got != want {
		t.Errorf("struct condition:\n got: %s\nwant: %s", got, want)
	}
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(&Review{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := stmt.Schema.Relationships.Relations["Book"]; !ok {
		t.Error("Review.Book is not a relationship")
	}
	if f := stmt.Schema.LookUpField("book"); f != nil && f.DBName != "" {
		t.Error("Review.Book became a column")
	}
	if len(stmt.Schema.UpdateClauses) != 0 {
		t.Errorf("Review got the version clauses of its relationship: %v", stmt.Schema.UpdateClauses)
	}
}

func TestConcurrencyErrorMessages(t *testing.T) {
	cases := []struct {
		err  *version.ConcurrencyError
		want string
	}{
		{&version.ConcurrencyError{Op: "update", Table: "books", PrimaryKey: []any{7}, Version: 1, Current: 2},
			"lockplugin: concurrent modification: stale update of books (primary key 7) read at version 1; the row is now at version 2"},
		{&version.ConcurrencyError{Op: "delete", Table: "books", PrimaryKey: []any{7, "x"}, Version: 1, Deleted: true},
			"lockplugin: concurrent modification: stale delete of books (primary key 7 x) read at version 1; the row has been deleted since"},
		{&version.ConcurrencyError{Op: "update", Table: "books", Version: 4, Current: 4},
			"lockplugin: concurrent modification: stale update of books read at version 4; the row is still at that version, so the statement's other conditions matched no row"},
		{nil, "lockplugin: concurrent modification"}, // a nil pointer says the sentinel's message, no panic
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("\n got: %s\nwant: %s", got, c.want)
		}
		wrapped := fmt.Errorf("saving: %w", c.err)
		if !errors.Is(wrapped, version.ErrConcurrency) {
			t.Error("errors.Is(ErrConcurrency) is false")
		}
		var ce *version.ConcurrencyError
		if !errors.As(wrapped, &ce) || ce != c.err {
			t.Error("errors.As does not find the *ConcurrencyError")
		}
	}
}

func TestRegister(t *testing.T) {
	if err := version.Register(nil, version.Config{}); err == nil {
		t.Error("Register(nil) succeeded")
	}
	db := open(t, "postgres", false)
	for _, c := range []struct{ kind, name string }{
		{"update", "lockplugin:version_guard"},
		{"update", "lockplugin:version_check"},
		{"delete", "lockplugin:version_guard"},
		{"delete", "lockplugin:version_check"},
	} {
		var p interface{ Get(string) func(*gorm.DB) }
		if c.kind == "update" {
			p = db.Callback().Update()
		} else {
			p = db.Callback().Delete()
		}
		if p.Get(c.name) == nil {
			t.Errorf("%s callback %s not registered", c.kind, c.name)
		}
	}
}

// With a SET clause of the caller's own, GORM adds no primary key
// condition; the guard adds it with the version.
func TestUserSetClause(t *testing.T) {
	db := open(t, "postgres", false)
	tx := db.Model(&Book{ID: 7, Version: 2}).Clauses(clause.Set{{Column: clause.Column{Name: "title"}, Value: "y"}}).Updates(map[string]any{})
	want := `UPDATE "books" SET "title"=$1,"version"=COALESCE("books"."version", 0) + 1 WHERE ("books"."id" = $2 AND "books"."version" = $3) [y 7 2]`
	if got := sqlOf(tx); got != want {
		t.Errorf("\n got: %s\nwant: %s", got, want)
	}
}

// A version in the values guards an update by condition; a table write
// the *gorm.DB knows is versioned increments it.
func TestSQLSuppliedAndTable(t *testing.T) {
	db := open(t, "postgres", false)
	for _, c := range []struct {
		name string
		run  func(db *gorm.DB) *gorm.DB
		want string
	}{
		// First: nothing has taught db the table yet.
		{"table before the model was seen", func(db *gorm.DB) *gorm.DB {
			return db.Table("books").Where("id = ?", 7).Update("title", "t")
		}, `UPDATE "books" SET "title"=$1 WHERE id = $2 [t 7]`},
		{"PATCH", func(db *gorm.DB) *gorm.DB {
			return db.Model(&Book{}).Where("id = ?", 7).Updates(Book{Title: "t", Version: 2})
		}, `UPDATE "books" SET "title"=$1,"version"=COALESCE("books"."version", 0) + 1 WHERE id = $2 AND "books"."version" = $3 [t 7 2]`},
		{"JSON merge", func(db *gorm.DB) *gorm.DB {
			return db.Model(&Book{ID: 7}).Updates(map[string]any{"Title": "t", "Version": float64(2)})
		}, `UPDATE "books" SET "title"=$1,"version"=COALESCE("books"."version", 0) + 1 WHERE "id" = $2 AND "books"."version" = $3 [t 7 2]`},
		{"two versions", func(db *gorm.DB) *gorm.DB {
			return db.Model(&Book{ID: 7, Version: 3}).Updates(map[string]any{"version": 2})
		}, `error: unsupported data: lockplugin: the update of Book carries two versions, 3 (the model) and 2 (the values); send the one the row was read at`},
		{"table after", func(db *gorm.DB) *gorm.DB {
			db.First(&Book{}) // teaches db the table
			return db.Table("books").Where("id = ?", 7).Update("title", "t")
		}, `UPDATE "books" SET "title"=$1,"version"=COALESCE("books"."version", 0) + 1 WHERE id = $2 [t 7]`},
		{"table write of the version", func(db *gorm.DB) *gorm.DB {
			return db.Table("books").Where("id = ?", 7).Update("version", 1)
		}, `error: unsupported data: lockplugin: the UPDATE of table books writes its version column version, which GORM cannot check without a model; use db.Model(&T{}) instead of db.Table("books") so that the version guards the write`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := sqlOf(c.run(db)); got != c.want {
				t.Errorf("\n got: %s\nwant: %s", got, c.want)
			}
		})
	}
}

// The table memory belongs to one registration: a new *gorm.DB starts
// without it.
func TestTablesArePerDB(t *testing.T) {
	a, b := open(t, "postgres", false), open(t, "postgres", false)
	a.First(&Book{})
	if got := sqlOf(b.Table("books").Where("id = ?", 7).Update("title", "t")); strings.Contains(got, "version") {
		t.Errorf("a second *gorm.DB learnt the table from the first: %s", got)
	}
}
