package fence

import (
	"github.com/lockplugin/lockplugin/internal/drivers"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// TestRawWrite: every writing statement shape is seen, on the dialect's
// own lexical rules, and reads (a locking read, string functions, keywords
// inside strings, comments and quoted identifiers) pass.
func TestRawWrite(t *testing.T) {
	pg, my, lite, ms := dialects.Postgres, dialects.MariaDB, dialects.SQLite, dialects.SQLServer
	for _, c := range []struct {
		kind   dialects.Kind
		sql    string
		writes bool
		kw     string
	}{
		{pg, "UPDATE t SET a = 1 RETURNING *", true, "UPDATE"},
		{pg, "  -- comment\n /* block */ delete from t returning id", true, "DELETE"},
		{pg, "INSERT INTO t (a) VALUES (1) RETURNING id", true, "INSERT"},
		{pg, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET a = 1", true, "MERGE"},
		{my, "REPLACE INTO t (id, a) VALUES (1, 2)", true, "REPLACE"},
		{pg, "WITH d AS (DELETE FROM t WHERE id = 1 RETURNING *) SELECT * FROM d", true, "DELETE"},
		{pg, "with u as (update t set a = 2 returning *) select count(*) from u", true, "UPDATE"},
		{pg, "WITH i AS (INSERT INTO t (a) VALUES (1) RETURNING *) SELECT * FROM i", true, "INSERT"},
		{pg, "((SELECT 1)); UPDATE t SET a = 1", true, "UPDATE"},
		{pg, "SELECT * INTO t2 FROM t", true, "INTO"},
		{pg, "EXPLAIN ANALYZE DELETE FROM t", true, "DELETE"},
		{pg, "CALL p()", true, "CALL"},
		{lite, "PRAGMA user_version = 3", true, "PRAGMA"},
		{my, "/*!50000 DELETE FROM t */", true, "DELETE"},
		{my, "# a comment\nUPDATE t SET a = 1", true, "UPDATE"},
		{pg, "SELECT 1 # 2; DELETE FROM t", true, "DELETE"},
		{my, `SELECT 'it\'s; DELETE' FROM t; UPDATE t SET a = 1`, true, "UPDATE"},
		{pg, `SELECT 'a\'; UPDATE t SET a = 1`, true, "UPDATE"},
		{pg, "SELECT $$ x $$; UPDATE t SET a = 1", true, "UPDATE"},

		{pg, "SELECT * FROM t WHERE id = $1 FOR UPDATE", false, ""},
		{pg, "SELECT * FROM t FOR NO KEY UPDATE SKIP LOCKED", false, ""},
		{pg, "select replace(name, 'a', 'b') from t where s = 'update; delete'", false, ""},
		{my, "SELECT INSERT(name, 1, 2, 'x') FROM t", false, ""},
		{pg, `SELECT "update", "delete" FROM t -- delete`, false, ""},
		{my, "SELECT `delete` FROM t /* UPDATE */", false, ""},
		{ms, "SELECT [update] FROM t WITH (UPDLOCK)", false, ""},
		{pg, "SELECT $tag$ DELETE $tag$, $1", false, ""},
		{pg, "WITH r AS (SELECT 1) SELECT * FROM r", false, ""},
		{pg, "  SELECT 1;  ", false, ""},
		{lite, "VALUES (1)", false, ""},
	} {
		kw, w := rawWrite(c.sql, lexisOf(c.kind))
		if w != c.writes || kw != c.kw {
			t.Errorf("%s %q: writes %v (%q), want %v (%q)", c.kind, c.sql, w, kw, c.writes, c.kw)
		}
	}
}

// lexisOf is the raw SQL lexis of a database of kind k.
func lexisOf(k dialects.Kind) sqldriver.Lexis {
	return drivers.For(dialects.Dialect{Kind: k}).Reread().RawLexis()
}

// FuzzRawWrite: the classifier ends on any input without panicking, and
// a writing statement after any text free of quotes and comment starters
// (which could hide it from the server too) is seen.
func FuzzRawWrite(f *testing.F) {
	for _, s := range []string{"SELECT 1", "WITH a AS (SELECT 1) SELECT * FROM a", "select 'x''y' from t", "$$", "/* x", "E'\\'", "[a", "`a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, k := range []dialects.Kind{dialects.Postgres, dialects.MariaDB, dialects.SQLite, dialects.SQLServer, dialects.Oracle} {
			rawWrite(s, lexisOf(k))
			if !strings.ContainsAny(s, "'\"`[$#-/\\") {
				if _, w := rawWrite(s+"; UPDATE t SET a = 1", lexisOf(k)); !w {
					t.Fatalf("%s: %q followed by an UPDATE: not seen", k, s)
				}
			}
		}
	})
}
