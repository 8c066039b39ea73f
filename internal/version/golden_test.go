package version

import (
	"strconv"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/dryrun"
	"github.com/lockplugin/lockplugin/internal/goldenfile"
)

// TestRereadGolden renders, on every database, the statements of the
// version guard that differ by database: the re-read of a row's version
// after a guarded write failed, the end of a guarded batch's savepoint or
// its lock-first read, an upsert's version bump, and whether an UPDATE may
// assign an identity key. The rest of each statement is GORM's, rendered
// here through the stand-in dialector of the database.
func TestRereadGolden(t *testing.T) {
	goldenfile.Check(t, "reread-version", func(d dialects.Dialect, p *goldenfile.Page) {
		db := goldenDB(t, d)
		byKey := goldenSelect(db, clause.Select{Columns: []clause.Column{{Name: "version"}}},
			clause.Where{Exprs: []clause.Expression{clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: "id"}, Value: 7}}})
		p.Add("re-read of a version by primary key, outside a transaction", byKey)
		p.Add("re-read of a version by primary key, in a transaction", drivers.For(d).Reread().VersionRead(byKey))
		byCond := goldenSelect(db, clause.Select{Columns: []clause.Column{{Name: "version"}, {Name: "id"}}},
			clause.Where{Exprs: []clause.Expression{clause.Eq{Column: clause.Column{Name: "title"}, Value: "x"}}},
			clause.Limit{Limit: ptr(1)})
		p.Add("re-read of a version by the caller's conditions, in a transaction", drivers.For(d).Reread().VersionRead(byCond))
		p.Add("release of a guarded batch's savepoint", drivers.For(d).ReleaseSavepoint("lockplugin_version_1f2e"))
		batch := goldenSelect(db, clause.Select{Columns: []clause.Column{{Name: "id"}}},
			clause.Where{Exprs: []clause.Expression{clause.Lte{Column: clause.Column{Name: "price"}, Value: 10}}})
		if lock := drivers.For(d).Reread().BatchLock(); lock != "" {
			p.Add("guarded batch in a transaction: lock-first read (no savepoint)", batch+lock)
		} else {
			p.Add("guarded batch in a transaction: lock-first read (no savepoint)", "")
		}
		f := &schema.Field{DBName: "version", Schema: &schema.Schema{Table: "books"}}
		fromInserted := clause.Set{
			{Column: clause.Column{Name: "title"}, Value: clause.Column{Table: "excluded", Name: "title"}},
			{Column: clause.Column{Name: "price"}, Value: clause.Column{Table: "excluded", Name: "price"}},
			{Column: clause.Column{Name: "version"}, Value: clause.Column{Table: "excluded", Name: "version"}},
		}
		p.Add("upsert bump, every column from the inserted row", goldenBuild(db, upsertBump(drivers.For(d).Reread(), fromInserted, f)))
		computed := clause.Set{
			{Column: clause.Column{Name: "title"}, Value: clause.Column{Table: "excluded", Name: "title"}},
			{Column: clause.Column{Name: "price"}, Value: clause.Expr{SQL: "price + 1"}},
		}
		p.Add("upsert bump, a computed assignment", goldenBuild(db, upsertBump(drivers.For(d).Reread(), computed, f)))
		p.Add("an UPDATE may assign an identity primary key", strconv.FormatBool(drivers.For(d).Reread().UpdatesIdentity()))
	})
}

func ptr(n int) *int { return &n }

// goldenDB is a dry-run *gorm.DB over the stand-in dialector of d.
func goldenDB(t *testing.T, d dialects.Dialect) *gorm.DB {
	t.Helper()
	db, err := dryrun.Open(d.Dialector, d.Version)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// goldenSelect renders a SELECT FROM books with the clauses given.
func goldenSelect(db *gorm.DB, clauses ...clause.Expression) string {
	var discard []map[string]any
	q := db.Session(&gorm.Session{NewDB: true, DryRun: true}).Table("books").Clauses(clauses...).Find(&discard)
	return q.Statement.SQL.String()
}

// goldenBuild renders an expression through GORM's statement builder.
func goldenBuild(db *gorm.DB, e clause.Expression) string {
	stmt := &gorm.Statement{DB: db, Table: "books", Clauses: map[string]clause.Clause{}}
	e.Build(stmt)
	return stmt.SQL.String()
}
