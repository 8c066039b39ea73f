package holds

import (
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/goldenfile"
)

func stmts(name, version string) statements {
	return newStatements(dialects.New(name, version), "app_holds")
}

// The exact statements of every database are in
// internal/drivers/<db>/testdata/holds.golden (TestHoldsGolden); the tests
// here pin the reasons behind some of them.

// A schema-qualified table is quoted part by part; quote characters in a
// name are doubled, never passed through.
func TestLockResourceQuotes(t *testing.T) {
	if _, read := stmts("sqlserver", "").lockResource("sales.seats]x", "id"); read != "SELECT * FROM [sales].[seats]]x] WITH (UPDLOCK, ROWLOCK) WHERE [id] = ?" {
		t.Errorf("qualified: %q", read)
	}
}

func TestCountSQL(t *testing.T) {
	pg := stmts("postgres", "")
	// The clock as a subquery, run once per statement, so that expires_at
	// > it is an index condition (compared directly, clock_timestamp() is
	// evaluated per row and the index cannot skip expired holds).
	if !strings.Contains(pg.count(false), "expires_at > (SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT))") {
		t.Errorf("PostgreSQL count does not judge expiry by the database clock once per statement: %s", pg.count(false))
	}
	// SQLite: two index ranges joined by UNION ALL, the resource's
	// arguments numbered since they appear twice.
	lite := stmts("sqlite", "").count(false)
	if !strings.Contains(lite, "holder = ?1 ") || strings.Count(lite, "resource_type = ?2 AND resource_id = ?3") != 2 || !strings.Contains(lite, "UNION ALL") {
		t.Errorf("SQLite count: %s", lite)
	}
	// Reads never lock, except the count inside a caller's transaction on
	// MySQL and MariaDB, which must not read a REPEATABLE READ snapshot.
	my, maria := stmts("mysql", "8.0.36"), stmts("mysql", "10.11.6-MariaDB")
	for _, q := range []string{pg.count(false), pg.count(true), pg.countActive(), pg.activeFor(), pg.byID(), my.count(false), maria.count(false)} {
		if strings.Contains(q, "FOR UPDATE") || strings.Contains(q, "FOR SHARE") || strings.Contains(q, "SHARE MODE") {
			t.Errorf("a read locks: %s", q)
		}
	}
	if q := my.count(true); !strings.HasSuffix(q, ")) FOR SHARE") {
		t.Errorf("MySQL count in a caller's transaction: %s", q)
	}
	if q := maria.count(true); !strings.HasSuffix(q, ")) LOCK IN SHARE MODE") {
		t.Errorf("MariaDB count in a caller's transaction: %s", q)
	}
}

func TestValidTable(t *testing.T) {
	for _, ok := range []string{"holds", "app_holds_2", "billing.holds", "_x"} {
		if err := validTable(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1x", "a-b", "a b", `a"b`, "a.b.c", ".x", "x.", strings.Repeat("x", 57), "h; DROP TABLE x"} {
		if err := validTable(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestTTLMillis(t *testing.T) {
	for _, c := range []struct {
		in   int64
		want int64
	}{{0, 0}, {-5, 0}, {1, 1}, {1_000_000, 1}, {1_000_001, 2}, {300_000_000, 300}} {
		if got := ttlMillis(timeDuration(c.in)); got != c.want {
			t.Errorf("ttlMillis(%dns) = %d, want %d", c.in, got, c.want)
		}
	}
}

// Holders compare byte for byte: PAD SPACE collations (MySQL, MariaDB) and
// SQL Server's = ignore trailing spaces, so there the comparison is cast to
// binary; the hold of a holder found by a locking count is read back with a
// locking read in a caller's transaction on MySQL and MariaDB.
func TestHolderComparedExactly(t *testing.T) {
	for _, c := range []struct{ dialector, version, want string }{
		{"postgres", "", "holder = ?"},
		{"sqlite", "", "holder = ?"},
		{"mysql", "8.0.36", "CAST(holder AS BINARY) = CAST(? AS BINARY)"},
		{"mysql", "10.11.6-MariaDB", "CAST(holder AS BINARY) = CAST(? AS BINARY)"},
		{"sqlserver", "", "CAST(holder AS VARBINARY(510)) = CAST(? AS VARBINARY(510))"},
	} {
		st := stmts(c.dialector, c.version)
		if got := st.holderIs(); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.dialector, c.version, got, c.want)
		}
		if !strings.Contains(st.count(false), c.want) || !strings.Contains(st.activeFor(), c.want) {
			t.Errorf("%s: count or activeFor does not compare exactly:\n%s\n%s", c.dialector, st.count(false), st.activeFor())
		}
	}
	maria, pg := stmts("mysql", "10.11.6-MariaDB"), stmts("postgres", "")
	if got := maria.byIDLatest(true); got != maria.byID()+" LOCK IN SHARE MODE" {
		t.Errorf("MariaDB byIDLatest in a caller's transaction: %q", got)
	}
	if maria.byIDLatest(false) != maria.byID() || pg.byIDLatest(true) != pg.byID() {
		t.Errorf("byIDLatest locks where it need not")
	}
}

// The one-statement grant is PostgreSQL's only: elsewhere the count and
// the insert are two statements under the resource row's lock.
func TestOneStatementGrant(t *testing.T) {
	if !stmts("postgres", "").oneStatementGrant() || stmts("mysql", "10.11.6-MariaDB").oneStatementGrant() || stmts("sqlite", "").oneStatementGrant() {
		t.Errorf("the one-statement grant is PostgreSQL's only")
	}
}

// TestCreateTableSQLiteSchema: SQLite names a schema on the index, never on
// the table of CREATE INDEX ... ON (ON "main"."t" is a syntax error there).
func TestCreateTableSQLiteSchema(t *testing.T) {
	lite := newStatements(dialects.New("sqlite", ""), "main.holds").createTable()
	want := `CREATE INDEX IF NOT EXISTS "main"."holds_active" ON "holds" (resource_type, resource_id, released_at, expires_at)`
	if len(lite) != 2 || lite[1] != want || !strings.Contains(lite[0], `CREATE TABLE IF NOT EXISTS "main"."holds" (`) {
		t.Errorf("SQLite DDL with a schema:\n got %q\nwant %q", lite, want)
	}
}

// TestBindAgreesWithBindVar: bind renders the n-th ? as the driver's
// BindVar(n) on every database (Oracle's :n included, which holds refuses
// but must not phrase otherwise), and leaves a numbered ?n as it is.
func TestBindAgreesWithBindVar(t *testing.T) {
	for _, db := range goldenfile.Databases() {
		dr := drivers.For(db.Dialect)
		want := "a = " + dr.BindVar(1) + " AND b IN (" + dr.BindVar(2) + ", " + dr.BindVar(3) + ")"
		if got := bind(dr, "a = ? AND b IN (?, ?)"); got != want {
			t.Errorf("%s: bind = %q, want %q", db.Dialect, got, want)
		}
		if got := bind(dr, "a = ?2 OR b = ?12"); got != "a = ?2 OR b = ?12" {
			t.Errorf("%s: a numbered placeholder rewritten: %q", db.Dialect, got)
		}
	}
	if got := bind(drivers.For(dialects.New("oracle", "")), "id = ?"); got != "id = :1" {
		t.Errorf("Oracle: %q", got)
	}
}
