package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

func mustRender(t *testing.T, dialector string) statements {
	t.Helper()
	d := dialects.New(dialector, "")
	table, err := quoteTable(d, DefaultTable)
	if err != nil {
		t.Fatal(err)
	}
	st, err := render(d, table)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

const (
	pgNow     = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
	mysqlNow  = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"
	mssqlNow  = "DATEDIFF_BIG(millisecond, '1970-01-01', SYSUTCDATETIME())"
	oraSince  = "(SYS_EXTRACT_UTC(SYSTIMESTAMP) - TIMESTAMP '1970-01-01 00:00:00')"
	oraNow    = "(EXTRACT(DAY FROM " + oraSince + ") * 86400000 + EXTRACT(HOUR FROM " + oraSince + ") * 3600000 + EXTRACT(MINUTE FROM " + oraSince + ") * 60000 + TRUNC(EXTRACT(SECOND FROM " + oraSince + ") * 1000))"
	sqliteNow = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
)

// next is the fence a grant hands out after fence f: max(f + 1, now * 1000).
func next(f, now string) string {
	return "CASE WHEN " + f + " + 1 > " + now + " * 1000 THEN " + f + " + 1 ELSE " + now + " * 1000 END"
}

// TestStatements pins the exact SQL of every statement on every database,
// including SQL Server and Oracle, which the conformance suite in tests/
// reaches only when their servers are configured (SQL Server) or not at
// all (Oracle).
func TestStatements(t *testing.T) {
	cases := []struct {
		dialector string
		stmt      func(statements) stmt
		sql       string
		args      []arg
	}{
		{"postgres", func(s statements) stmt { return s.acquire },
			`WITH u AS (UPDATE "lock_leases" AS l SET owner = $1, expires_at = CASE WHEN CAST($2 AS BIGINT) = 0 THEN 0 ELSE ` + pgNow + ` + CAST($2 AS BIGINT) END, ` +
				`fence = CASE WHEN l.owner = $1 AND (l.expires_at = 0 OR l.expires_at > ` + pgNow + `) THEN l.fence ELSE ` + next("l.fence", pgNow) + ` END ` +
				`WHERE l.lock_name = $3 AND (l.owner = $1 OR (l.expires_at <> 0 AND l.expires_at <= ` + pgNow + `)) RETURNING l.fence), ` +
				`i AS (INSERT INTO "lock_leases" (lock_name, owner, expires_at, fence) SELECT $3, $1, CASE WHEN CAST($2 AS BIGINT) = 0 THEN 0 ELSE ` + pgNow + ` + CAST($2 AS BIGINT) END, ` + pgNow + ` * 1000 ` +
				`WHERE NOT EXISTS (SELECT 1 FROM u) AND NOT EXISTS (SELECT 1 FROM "lock_leases" WHERE lock_name = $3) ON CONFLICT (lock_name) DO NOTHING RETURNING fence) ` +
				`SELECT fence FROM u UNION ALL SELECT fence FROM i`,
			[]arg{argOwner, argTTL, argName}},
		{"postgres", func(s statements) stmt { return s.release },
			`UPDATE "lock_leases" SET expires_at = -1 WHERE lock_name = $1 AND owner = $2 AND (expires_at = 0 OR expires_at > ` + pgNow + `)`,
			[]arg{argName, argOwner}},
		{"postgres", func(s statements) stmt { return s.refresh },
			`UPDATE "lock_leases" SET expires_at = CASE WHEN CAST($1 AS BIGINT) = 0 THEN 0 ELSE ` + pgNow + ` + CAST($1 AS BIGINT) END WHERE lock_name = $2 AND owner = $3 AND (expires_at = 0 OR expires_at > ` + pgNow + `)`,
			[]arg{argTTL, argName, argOwner}},
		{"sqlite", func(s statements) stmt { return s.acquire },
			`INSERT INTO "lock_leases" AS l (lock_name, owner, expires_at, fence) VALUES (?, ?, CASE WHEN ? = 0 THEN 0 ELSE ` + sqliteNow + ` + ? END, ` + sqliteNow + ` * 1000) ` +
				`ON CONFLICT (lock_name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, ` +
				`fence = CASE WHEN l.owner = excluded.owner AND (l.expires_at = 0 OR l.expires_at > ` + sqliteNow + `) THEN l.fence ELSE ` + next("l.fence", sqliteNow) + ` END ` +
				`WHERE l.owner = excluded.owner OR (l.expires_at <> 0 AND l.expires_at <= ` + sqliteNow + `) RETURNING fence`,
			[]arg{argName, argOwner, argTTL, argTTL}},
		{"mysql", func(s statements) stmt { return s.acquire },
			"INSERT INTO `lock_leases` (lock_name, owner, expires_at, fence) VALUES (?, ?, CASE WHEN ? = 0 THEN 0 ELSE " + mysqlNow + " + ? END, LAST_INSERT_ID(" + mysqlNow + " * 1000)) " +
				"ON DUPLICATE KEY UPDATE " +
				"fence = IF(owner = VALUES(owner) OR (expires_at <> 0 AND expires_at <= VALUES(fence) DIV 1000), LAST_INSERT_ID(IF(owner = VALUES(owner) AND (expires_at = 0 OR expires_at > VALUES(fence) DIV 1000), fence, GREATEST(fence + 1, VALUES(fence)))), fence + LAST_INSERT_ID(0)), " +
				"owner = IF(owner = VALUES(owner) OR (expires_at <> 0 AND expires_at <= VALUES(fence) DIV 1000), VALUES(owner), owner), " +
				"expires_at = IF(owner = VALUES(owner) OR (expires_at <> 0 AND expires_at <= VALUES(fence) DIV 1000), VALUES(expires_at), expires_at)",
			[]arg{argName, argOwner, argTTL, argTTL}},
		{"mysql", func(s statements) stmt { return s.release },
			"UPDATE `lock_leases` SET expires_at = -1, fence = LAST_INSERT_ID(fence) WHERE lock_name = ? AND owner = ? AND (expires_at = 0 OR expires_at > " + mysqlNow + ")",
			[]arg{argName, argOwner}},
		{"mysql", func(s statements) stmt { return s.refresh },
			"UPDATE `lock_leases` SET expires_at = CASE WHEN ? = 0 THEN 0 ELSE " + mysqlNow + " + ? END, fence = LAST_INSERT_ID(fence) WHERE lock_name = ? AND owner = ? AND (expires_at = 0 OR expires_at > " + mysqlNow + ")",
			[]arg{argTTL, argTTL, argName, argOwner}},
		{"sqlserver", func(s statements) stmt { return s.acquire },
			`MERGE INTO [lock_leases] WITH (HOLDLOCK) AS l USING (SELECT @p1 AS lock_name) AS s ON l.lock_name = s.lock_name ` +
				`WHEN MATCHED AND (l.owner = @p2 OR (l.expires_at <> 0 AND l.expires_at <= ` + mssqlNow + `)) THEN UPDATE SET owner = @p2, expires_at = CASE WHEN @p3 = 0 THEN 0 ELSE ` + mssqlNow + ` + @p3 END, ` +
				`fence = CASE WHEN l.owner = @p2 AND (l.expires_at = 0 OR l.expires_at > ` + mssqlNow + `) THEN l.fence ELSE ` + next("l.fence", mssqlNow) + ` END ` +
				`WHEN NOT MATCHED THEN INSERT (lock_name, owner, expires_at, fence) VALUES (@p1, @p2, CASE WHEN @p3 = 0 THEN 0 ELSE ` + mssqlNow + ` + @p3 END, ` + mssqlNow + ` * 1000) ` +
				`OUTPUT inserted.fence;`,
			[]arg{argName, argOwner, argTTL}},
		{"sqlserver", func(s statements) stmt { return s.release },
			`UPDATE [lock_leases] SET expires_at = -1 WHERE lock_name = @p1 AND owner = @p2 AND (expires_at = 0 OR expires_at > ` + mssqlNow + `)`,
			[]arg{argName, argOwner}},
		{"oracle", func(s statements) stmt { return s.acquire },
			`DECLARE f NUMBER(19) := 0; BEGIN BEGIN ` +
				`MERGE INTO "lock_leases" l USING (SELECT :1 AS lock_name FROM dual) s ON (l.lock_name = s.lock_name) ` +
				`WHEN MATCHED THEN UPDATE SET l.owner = :2, l.expires_at = CASE WHEN :3 = 0 THEN 0 ELSE ` + oraNow + ` + :4 END, ` +
				`l.fence = CASE WHEN l.owner = :5 AND (l.expires_at = 0 OR l.expires_at > ` + oraNow + `) THEN l.fence ELSE ` + next("l.fence", oraNow) + ` END ` +
				`WHERE l.owner = :6 OR (l.expires_at <> 0 AND l.expires_at <= ` + oraNow + `) ` +
				`WHEN NOT MATCHED THEN INSERT (lock_name, owner, expires_at, fence) VALUES (:7, :8, CASE WHEN :9 = 0 THEN 0 ELSE ` + oraNow + ` + :10 END, ` + oraNow + ` * 1000); ` +
				`IF SQL%ROWCOUNT = 1 THEN SELECT fence INTO f FROM "lock_leases" WHERE lock_name = :11; END IF; ` +
				`EXCEPTION WHEN DUP_VAL_ON_INDEX THEN f := 0; END; :12 := f; END;`,
			[]arg{argName, argOwner, argTTL, argTTL, argOwner, argOwner, argName, argOwner, argTTL, argTTL, argName, argFence}},
		{"oracle", func(s statements) stmt { return s.refresh },
			`UPDATE "lock_leases" SET expires_at = CASE WHEN :1 = 0 THEN 0 ELSE ` + oraNow + ` + :2 END WHERE lock_name = :3 AND owner = :4 AND (expires_at = 0 OR expires_at > ` + oraNow + `)`,
			[]arg{argTTL, argTTL, argName, argOwner}},
	}
	for _, c := range cases {
		st := c.stmt(mustRender(t, c.dialector))
		if st.SQL != c.sql {
			t.Errorf("%s:\n got %s\nwant %s", c.dialector, st.SQL, c.sql)
		}
		if len(st.args) != len(c.args) {
			t.Errorf("%s: args %v, want %v", c.dialector, st.args, c.args)
			continue
		}
		for i := range st.args {
			if st.args[i] != c.args[i] {
				t.Errorf("%s: args %v, want %v", c.dialector, st.args, c.args)
				break
			}
		}
	}
}

func TestBind(t *testing.T) {
	var fence int64
	st := mustRender(t, "oracle").acquire
	got := st.bind(values{name: "n", owner: "o", ttl: 250, fence: &fence})
	if len(got) != 12 || got[0] != "n" || got[1] != "o" || got[2] != int64(250) {
		t.Fatalf("bind = %v", got)
	}
	if out, ok := got[11].(sql.Out); !ok || out.Dest != &fence {
		t.Fatalf("the fence is not bound as an OUT parameter: %#v", got[11])
	}
}

func TestCreateTableSQL(t *testing.T) {
	want := map[string]string{
		"postgres": `CREATE TABLE IF NOT EXISTS "lock_leases" (lock_name VARCHAR(191) NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL)`,
		"sqlite":   `CREATE TABLE IF NOT EXISTS "lock_leases" (lock_name VARCHAR(191) NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL) WITHOUT ROWID`,
		"mysql":    "CREATE TABLE IF NOT EXISTS `lock_leases` (lock_name VARCHAR(191) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY, owner VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL) ENGINE=InnoDB",
		"sqlserver": `IF OBJECT_ID(N'[lock_leases]', N'U') IS NULL CREATE TABLE [lock_leases] (lock_name NVARCHAR(191) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY, ` +
			`owner NVARCHAR(64) COLLATE Latin1_General_100_BIN2 NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL);`,
		"oracle": `BEGIN EXECUTE IMMEDIATE 'CREATE TABLE "lock_leases" (lock_name VARCHAR2(191) NOT NULL PRIMARY KEY, owner VARCHAR2(64) NOT NULL, expires_at NUMBER(19) NOT NULL, fence NUMBER(19) NOT NULL)'; ` +
			`EXCEPTION WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF; END;`,
	}
	for dialector, w := range want {
		got, err := CreateTableSQL(dialector)
		if err != nil || got != w {
			t.Errorf("%s:\n got %s (%v)\nwant %s", dialector, got, err, w)
		}
	}
	got, err := CreateTableSQL("sqlserver", Table("app.leases"))
	if err != nil || !strings.HasPrefix(got, `IF OBJECT_ID(N'[app].[leases]', N'U') IS NULL CREATE TABLE [app].[leases] (`) {
		t.Errorf("schema-qualified table: %s (%v)", got, err)
	}
	if _, err := CreateTableSQL("clickhouse"); !errors.Is(err, dialects.ErrUnsupported) {
		t.Errorf("unknown dialect: %v, want ErrUnsupported", err)
	}
	if _, err := CreateTableSQL("postgres", Table("x; DROP TABLE y")); err == nil {
		t.Error("an injected table name was accepted")
	}
}

func TestTableNames(t *testing.T) {
	d := dialects.New("postgres", "")
	for _, ok := range []string{"lock_leases", "_x", "app.leases", "L1"} {
		if _, err := quoteTable(d, ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1x", `a"b`, "a b", "a.b.c", "a.", strings.Repeat("x", 64), "ä"} {
		if _, err := quoteTable(d, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestKey(t *testing.T) {
	long := strings.Repeat("x", 300)
	cases := map[string]bool{ // name: stored as is
		"order-42":                          true,
		"a b":                               true,
		strings.Repeat("x", 191):            true,
		strings.Repeat("x", 192):            false,
		"trailing ":                         false,
		"заказ":                             false,
		"tab\there":                         false,
		"nul\x00":                           false,
		"sha256:" + strings.Repeat("0", 64): false,
	}
	for name, plain := range cases {
		k := key(name)
		if (k == name) != plain {
			t.Errorf("key(%q) = %q; plain %v, want %v", name, k, k == name, plain)
		}
		if len(k) > maxKeyLength {
			t.Errorf("key(%q) is %d bytes, over the column's %d", name, len(k), maxKeyLength)
		}
	}
	if key(long) == key(long[:299]+"y") {
		t.Error("two long names share a key")
	}
	if k := key(long); !strings.HasPrefix(k, "sha256:") || len(k) != 71 {
		t.Errorf("key of a long name = %q", k)
	}
	// A name that looks like a stored hash is hashed itself, so it cannot
	// collide with the name it looks like the hash of.
	if key(key(long)) == key(long) {
		t.Error("a name equal to another name's stored hash shares its key")
	}
}

type fakeTx struct{ dryrunPool }

func (fakeTx) Commit() error   { return nil }
func (fakeTx) Rollback() error { return nil }

// dryrunPool is a ConnPool that must never be reached.
type dryrunPool struct{}

func (dryrunPool) PrepareContext(context.Context, string) (*sql.Stmt, error) {
	panic("sent SQL")
}
func (dryrunPool) ExecContext(context.Context, string, ...any) (sql.Result, error) {
	panic("sent SQL")
}
func (dryrunPool) QueryContext(context.Context, string, ...any) (*sql.Rows, error) {
	panic("sent SQL")
}
func (dryrunPool) QueryRowContext(context.Context, string, ...any) *sql.Row {
	panic("sent SQL")
}

func TestNewRefusesBeforeSendingAnything(t *testing.T) {
	db, err := dryrun.Open("postgres", "")
	if err != nil {
		t.Fatal(err)
	}
	tx := db.Session(&gorm.Session{})
	tx.Statement.ConnPool = fakeTx{}
	if _, err := New(tx); err == nil || !strings.Contains(err.Error(), "inside a transaction") {
		t.Errorf("New inside a transaction: %v", err)
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	pg := db.Session(&gorm.Session{})
	pg.Statement.ConnPool = dryrunPool{}
	if _, err := New(pg, Table("bad name")); err == nil {
		t.Error("bad table name accepted")
	}
	if _, err := New(pg, nil, Table("bad name")); err == nil {
		t.Error("bad table name beside a nil option accepted")
	}
	unknown, _ := dryrun.Open("clickhouse", "")
	if _, err := New(unknown); !errors.Is(err, dialects.ErrUnsupported) || !strings.Contains(err.Error(), "lease table store") {
		t.Errorf("unknown dialect: %v, want ErrUnsupported naming the feature", err)
	}
}

func TestStoreRefusesBadArguments(t *testing.T) {
	db, _ := dryrun.Open("postgres", "")
	db.Statement.ConnPool = dryrunPool{}
	s, err := New(db, CreateTable(false))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := s.Acquire(ctx, "", "o", 0); err == nil {
		t.Error("empty name accepted")
	}
	if _, _, err := s.Acquire(ctx, "n", "", 0); err == nil {
		t.Error("empty owner accepted")
	}
	if _, _, err := s.Acquire(ctx, "n", strings.Repeat("o", 65), 0); err == nil {
		t.Error("65-byte owner accepted")
	}
	if _, err := s.Refresh(ctx, "n", "o", -1); err == nil {
		t.Error("negative TTL accepted")
	}
	v, _ := s.values(ctx, "n", "o", 1) // 1ns
	if v.ttl != 1 {
		t.Errorf("a 1 ns TTL became %d ms; it must round up, not to 0 (no expiry)", v.ttl)
	}
	// The longest TTL must not overflow into a negative, already expired one.
	if v, _ := s.values(ctx, "n", "o", math.MaxInt64); v.ttl != int64(math.MaxInt64/time.Millisecond)+1 {
		t.Errorf("TTL(math.MaxInt64) became %d ms", v.ttl)
	}
}
