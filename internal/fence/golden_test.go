package fence

import (
	"github.com/lockplugin/lockplugin/internal/drivers"
	"strconv"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/dryrun"
	"github.com/lockplugin/lockplugin/internal/goldenfile"
)

// rawSamples are raw statements whose classification (read or write)
// depends on how the database quotes and comments.
var rawSamples = []string{
	"SELECT 1 # ; DELETE FROM t",
	"SELECT '\\' ; DELETE FROM t --'",
	`SELECT "\" ; DELETE FROM t --"`,
	"SELECT E'\\' ; DELETE FROM t --'",
	"SELECT $$ ; DELETE FROM t $$",
	"SELECT [a;DELETE] FROM t",
	"SELECT 1 /*!50000 ; DELETE FROM t */",
	"SELECT `x;DELETE` FROM t FOR UPDATE",
	"WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
}

// TestRereadGolden renders, on every database, the statements of fenced
// writes that differ by database: the re-read of the rows a write matched
// (their count and greatest fence), an upsert's fenced update branch or
// the reason it is refused, whether an UPDATE may assign an identity key,
// and how raw SQL sent under a fence is read (its quotes and comments).
func TestRereadGolden(t *testing.T) {
	goldenfile.Check(t, "reread-fence", func(d dialects.Dialect, p *goldenfile.Page) {
		db, err := dryrun.Open(d.Dialector, d.Version)
		if err != nil {
			t.Fatal(err)
		}
		var discard []map[string]any
		q := db.Session(&gorm.Session{NewDB: true, DryRun: true}).Table("accounts").
			Clauses(clause.Where{Exprs: []clause.Expression{clause.IN{Column: clause.Column{Name: "id"}, Values: []any{1, 2}}}}).
			Select("COUNT(*), COALESCE(MAX(?), 0)", clause.Column{Name: "fence"}).Find(&discard)
		sel := q.Statement.SQL.String()
		p.Add("re-read of the rows a fenced write matched, outside a transaction", sel)
		p.Add("re-read of the rows a fenced write matched, in a transaction", drivers.For(d).Reread().FenceRead(sel))
		if refusal := drivers.For(d).Reread().UpsertFenceRefusal(); refusal == "" {
			stmt := &gorm.Statement{DB: db, Table: "accounts", Clauses: map[string]clause.Clause{}}
			clause.Where{Exprs: []clause.Expression{cond{col: "fence", fence: 7}}}.Build(stmt)
			p.Add("fenced upsert: the condition of its update branch", stmt.SQL.String())
			p.Add("fenced upsert: refused because", "")
		} else {
			p.Add("fenced upsert: the condition of its update branch", "")
			p.Add("fenced upsert: refused because", refusal)
		}
		p.Add("an UPDATE may assign an identity primary key", strconv.FormatBool(drivers.For(d).Reread().UpdatesIdentity()))
		for _, s := range rawSamples {
			kw, writes := rawWrite(s, drivers.For(d).Reread().RawLexis())
			got := "reads"
			if writes {
				got = "writes (" + kw + ")"
			}
			p.Add("raw under a fence: "+s, got)
		}
	})
}
