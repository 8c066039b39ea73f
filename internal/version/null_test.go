package version_test

// Issue 22: rows that predate the version column (NULL versions), the
// column AutoMigrate creates, and a versioned model without a primary key.

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/internal/version"
)

// Keyless has a version but no primary key.
type Keyless struct {
	Name string
	version.Version
}

func TestNullGuardSQL(t *testing.T) {
	cases := []struct {
		name string
		run  func(db *gorm.DB) *gorm.DB
		want string
	}{
		{
			name: "Save of a row read at NULL",
			run:  func(db *gorm.DB) *gorm.DB { return db.Save(&Book{ID: 7, Title: "t", Version: version.Null}) },
			want: `UPDATE "books" SET "title"=$1,"version"=COALESCE("books"."version", 0) + 1 WHERE "id" = $2 AND "books"."version" IS NULL [t 7]`,
		},
		{
			name: "Delete of a row read at NULL",
			run:  func(db *gorm.DB) *gorm.DB { return db.Delete(&Book{ID: 7, Version: version.Null}) },
			want: `DELETE FROM "books" WHERE "books"."version" IS NULL AND "books"."id" = $1 [7]`,
		},
		{
			name: "slice Delete mixing NULL and a version",
			run: func(db *gorm.DB) *gorm.DB {
				return db.Delete(&[]Book{{ID: 7, Version: version.Null}, {ID: 8, Version: 3}})
			},
			want: `DELETE FROM "books" WHERE (("books"."id" = $1 AND "books"."version" IS NULL) OR ("books"."id" = $2 AND "books"."version" = $3)) AND "books"."id" IN ($4,$5) [7 8 3 7 8]`,
		},
		{
			name: "Create of a struct read at NULL writes 1",
			run:  func(db *gorm.DB) *gorm.DB { return db.Create(&Book{Title: "copy", Version: version.Null}) },
			want: `INSERT INTO "books" ("title","version") VALUES ($1,$2) [copy 1]`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sqlOf(c.run(open(t, "postgres", false))); got != c.want {
				t.Errorf("\n got: %s\nwant: %s", got, c.want)
			}
		})
	}
}

// The version column is DEFAULT 1 (and nullable) for AutoMigrate, unless the tag
// gives a default; a NULL scans as Null, a value as itself.
func TestColumnShapeAndNullScan(t *testing.T) {
	type Tagged struct {
		ID  uint
		Rev version.Version `gorm:"column:rev;default:0"`
	}
	db := open(t, "postgres", false)
	for _, c := range []struct {
		model any
		col   string
		def   string
	}{{&Book{}, "version", "1"}, {&Invoice{}, "lock_version", "1"}, {&Tagged{}, "rev", "0"}} {
		stmt := &gorm.Statement{DB: db}
		if err := stmt.Parse(c.model); err != nil {
			t.Fatal(err)
		}
		f := stmt.Schema.LookUpField(c.col)
		if f.NotNull || !f.HasDefaultValue || f.DefaultValue != c.def {
			t.Errorf("%T.%s: NotNull %v, default %v %q; want nullable DEFAULT %s", c.model, c.col, f.NotNull, f.HasDefaultValue, f.DefaultValue, c.def)
		}
	}

	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(&Book{}); err != nil {
		t.Fatal(err)
	}
	f := stmt.Schema.LookUpField("version")
	var b Book
	rv := reflect.ValueOf(&b).Elem()
	var null *version.Version
	if err := f.Set(context.Background(), rv, &null); err != nil || b.Version != version.Null {
		t.Errorf("NULL scanned as %d (%v), want Null", b.Version, err)
	}
	v := version.Version(4)
	p := &v
	if err := f.Set(context.Background(), rv, &p); err != nil || b.Version != 4 {
		t.Errorf("4 scanned as %d (%v)", b.Version, err)
	}
	// The Review's relationship to a versioned Book is untouched.
	rstmt := &gorm.Statement{DB: db}
	if err := rstmt.Parse(&Review{}); err != nil {
		t.Fatal(err)
	}
	if rstmt.Schema.Relationships.Relations["Book"] == nil {
		t.Error("Review.Book is no longer a relationship")
	}
}

func TestConcurrencyErrorNull(t *testing.T) {
	e := &version.ConcurrencyError{Op: "update", Table: "books", PrimaryKey: []any{7}, Version: version.Null, Current: 1}
	if got := e.Error(); !strings.Contains(got, "read at version NULL; the row is now at version 1") {
		t.Error(got)
	}
}

// A versioned model without a primary key and without conditions fails
// before any SQL with an error naming the model and the fix; with
// conditions it is written as before.
func TestKeylessModel(t *testing.T) {
	for name, run := range map[string]func(db *gorm.DB) *gorm.DB{
		"Save":    func(db *gorm.DB) *gorm.DB { return db.Save(&Keyless{Name: "a", Version: 2}) },
		"Updates": func(db *gorm.DB) *gorm.DB { return db.Model(&Keyless{Version: 2}).Updates(Keyless{Name: "b"}) },
		"Delete":  func(db *gorm.DB) *gorm.DB { return db.Delete(&Keyless{Name: "a", Version: 2}) },
	} {
		t.Run(name, func(t *testing.T) {
			tx := run(open(t, "postgres", false))
			if !errors.Is(tx.Error, gorm.ErrMissingWhereClause) || !strings.Contains(tx.Error.Error(), "Keyless has a version column but no primary key") ||
				!strings.Contains(tx.Error.Error(), "primaryKey") {
				t.Fatalf("got %v", tx.Error)
			}
			if tx.Statement.SQL.Len() != 0 {
				t.Errorf("SQL was built: %s", tx.Statement.SQL.String())
			}
		})
	}
	got := sqlOf(open(t, "postgres", false).Where("name = ?", "a").Delete(&Keyless{Version: 2}))
	if want := `DELETE FROM "keylesses" WHERE name = $1 AND "keylesses"."version" = $2 [a 2]`; got != want {
		t.Errorf("\n got: %s\nwant: %s", got, want)
	}
}
