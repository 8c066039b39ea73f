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

func TestLockResourceSQL(t *testing.T) {
	cases := []struct {
		dialector, version string
		lock, read         string
	}{
		{"postgres", "", "", `SELECT * FROM "seats" WHERE "id" = ? FOR UPDATE`},
		{"mysql", "8.0.36", "", "SELECT * FROM `seats` WHERE `id` = ? FOR UPDATE"},
		{"mysql", "10.11.6-MariaDB", "", "SELECT * FROM `seats` WHERE `id` = ? FOR UPDATE"},
		{"sqlserver", "", "", "SELECT * FROM [seats] WITH (UPDLOCK, ROWLOCK) WHERE [id] = ?"},
		{"sqlite", "", `UPDATE "seats" SET "id" = "id" WHERE "id" = ?`, `SELECT * FROM "seats" WHERE "id" = ?`},
	}
	for _, c := range cases {
		lock, read := stmts(c.dialector, c.version).lockResource("seats", "id")
		if lock != c.lock || read != c.read {
			t.Errorf("%s %s:\n lock %q\n read %q\nwant\n lock %q\n read %q", c.dialector, c.version, lock, read, c.lock, c.read)
		}
	}
	// A schema-qualified table is quoted part by part; quote characters in
	// a name are doubled, never passed through.
	if _, read := stmts("sqlserver", "").lockResource("sales.seats]x", "id"); read != "SELECT * FROM [sales].[seats]]x] WITH (UPDLOCK, ROWLOCK) WHERE [id] = ?" {
		t.Errorf("qualified: %q", read)
	}
}

func TestCountSQL(t *testing.T) {
	got := stmts("sqlserver", "").count(true)
	want := "SELECT COUNT(*), MIN(CASE WHEN CAST(holder AS VARBINARY(510)) = CAST(? AS VARBINARY(510)) THEN id END), DATEDIFF_BIG(millisecond, '1970-01-01', SYSUTCDATETIME()) " +
		"FROM [app_holds] WHERE resource_type = ? AND resource_id = ? AND released_at IS NULL AND " +
		"(expires_at IS NULL OR expires_at > DATEDIFF_BIG(millisecond, '1970-01-01', SYSUTCDATETIME()))"
	if got != want {
		t.Errorf("count:\n got %s\nwant %s", got, want)
	}
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

func TestIsolationCheck(t *testing.T) {
	cases := []struct {
		dialector, level string
		query, refused   bool
	}{
		{"postgres", "read committed", true, false},
		{"postgres", "repeatable read", true, true},
		{"postgres", "serializable", true, true},
		{"postgres", "read uncommitted", true, false},
		{"sqlserver", "2", true, false},
		{"sqlserver", "5", true, true},
		{"mysql", "REPEATABLE-READ", false, false},
		{"sqlite", "", false, false},
	}
	for _, c := range cases {
		st := stmts(c.dialector, "")
		if got := st.isolation() != ""; got != c.query {
			t.Errorf("%s: isolation query %q", c.dialector, st.isolation())
		}
		if got := st.snapshotIsolation(c.level); got != c.refused {
			t.Errorf("%s %q: refused = %v, want %v", c.dialector, c.level, got, c.refused)
		}
	}
}

func TestSavepointSQL(t *testing.T) {
	ms, pg := stmts("sqlserver", ""), stmts("postgres", "")
	for _, c := range [][2]string{
		{ms.savepoint(), "SAVE TRANSACTION lockplugin_holds"},
		{ms.rollbackTo(), "ROLLBACK TRANSACTION lockplugin_holds"},
		{ms.releaseSavepoint(), ""},
		{pg.savepoint(), "SAVEPOINT lockplugin_holds"},
		{pg.rollbackTo(), "ROLLBACK TO SAVEPOINT lockplugin_holds"},
		{pg.releaseSavepoint(), "RELEASE SAVEPOINT lockplugin_holds"},
	} {
		if c[0] != c[1] {
			t.Errorf("got %q, want %q", c[0], c[1])
		}
	}
}

func TestCreateTableSQL(t *testing.T) {
	ms := stmts("sqlserver", "").createTable()
	want := "IF OBJECT_ID(N'app_holds', N'U') IS NULL CREATE TABLE [app_holds] (" +
		"id BIGINT IDENTITY(1,1) NOT NULL PRIMARY KEY, " +
		"resource_type NVARCHAR(191) COLLATE Latin1_General_100_BIN2 NOT NULL, " +
		"resource_id NVARCHAR(191) COLLATE Latin1_General_100_BIN2 NOT NULL, " +
		"holder NVARCHAR(255) COLLATE Latin1_General_100_BIN2 NOT NULL, " +
		"created_at BIGINT NOT NULL, expires_at BIGINT NULL, released_at BIGINT NULL, " +
		"INDEX [app_holds_active] (resource_type, resource_id, released_at, expires_at))"
	if len(ms) != 1 || ms[0] != want {
		t.Errorf("SQL Server DDL:\n got %q\nwant %q", ms, want)
	}
	pg := newStatements(dialects.New("postgres", ""), "billing.holds").createTable()
	if len(pg) != 2 || pg[1] != `CREATE INDEX IF NOT EXISTS "holds_active" ON "billing"."holds" (resource_type, resource_id, released_at, expires_at)` {
		t.Errorf("PostgreSQL DDL: %q", pg)
	}
	my := stmts("mysql", "10.11.6-MariaDB").createTable()
	if len(my) != 1 || !strings.Contains(my[0], "holder VARBINARY(255) NOT NULL") ||
		!strings.Contains(my[0], "INDEX `app_holds_active` (resource_type, resource_id, released_at, expires_at)") {
		t.Errorf("MariaDB DDL: %q", my)
	}
	lite := stmts("sqlite", "").createTable()
	if len(lite) != 2 || !strings.Contains(lite[0], "id INTEGER PRIMARY KEY AUTOINCREMENT") {
		t.Errorf("SQLite DDL: %q", lite)
	}
	if got := stmts("oracle", "").createTable(); got != nil {
		t.Errorf("Oracle DDL: %q, want none", got)
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

// PostgreSQL's one-statement grant: one scan of the resource's holds
// counts them and the holder's, and the insert happens only when neither
// stops it.
func TestGrantSQL(t *testing.T) {
	pg := stmts("postgres", "")
	now := "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
	active := "released_at IS NULL AND (expires_at IS NULL OR expires_at > " + now + ")"
	activeOf := "resource_type = $1 AND resource_id = $2 AND released_at IS NULL AND (expires_at IS NULL OR expires_at > (SELECT " + now + "))"
	want := `INSERT INTO "app_holds" (resource_type, resource_id, holder, created_at, expires_at) ` +
		"SELECT CAST($1 AS VARCHAR), CAST($2 AS VARCHAR), CAST($3 AS VARCHAR), n.now, n.now + CAST($4 AS BIGINT) " +
		"FROM (SELECT " + now + " AS now) AS n, " +
		`(SELECT COUNT(*) AS total, COUNT(CASE WHEN holder = $3 THEN 1 END) AS mine FROM "app_holds" WHERE ` + activeOf + ") AS k " +
		"WHERE k.mine = 0 AND k.total < CAST($5 AS BIGINT) RETURNING id, created_at, expires_at"
	if got := pg.grant(); got != want {
		t.Errorf("grant:\n got %s\nwant %s", got, want)
	}
	if !pg.oneStatementGrant() || stmts("mysql", "10.11.6-MariaDB").oneStatementGrant() || stmts("sqlite", "").oneStatementGrant() {
		t.Errorf("the one-statement grant is PostgreSQL's only")
	}
	if got := pg.compiled().releaseReturning; got != `UPDATE "app_holds" SET released_at = `+now+` WHERE id = $1 AND `+active+` RETURNING released_at` {
		t.Errorf("release: %s", got)
	}
	if got := pg.compiled().forceReleaseHolder; got != `SELECT id FROM "app_holds" WHERE `+activeOf+` AND holder = $3 ORDER BY id` {
		t.Errorf("force release: %s", got)
	}
	if got := pg.compiled().markExpired; got != `UPDATE "app_holds" SET released_at = expires_at WHERE id = $1 AND released_at IS NULL AND expires_at IS NOT NULL` {
		t.Errorf("mark expired: %s", got)
	}
	if got := stmts("sqlserver", "").compiled().insert; got != "INSERT INTO [app_holds] (resource_type, resource_id, holder, created_at, expires_at) OUTPUT INSERTED.id VALUES (@p1, @p2, @p3, @p4, @p5)" {
		t.Errorf("SQL Server insert: %s", got)
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
