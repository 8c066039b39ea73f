package advisory_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// tidbRefs counts the holds conn's session has of every name, and releases
// them: TiDB's RELEASE_ALL_LOCKS answers the sum of the reference counts.
// It has no argument, so its answer is folded once at planning, never
// again.
func tidbRefs(t *testing.T, ctx context.Context, conn *sql.Conn) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT RELEASE_ALL_LOCKS()").Scan(&n); err != nil {
		t.Fatalf("RELEASE_ALL_LOCKS: %v", err)
	}
	return n
}

// TestTiDBStatementShapes measures how often TiDB evaluates GET_LOCK and
// RELEASE_LOCK in each statement shape sent with bind parameters (a
// server-side prepared statement through go-sql-driver). TiDB's planner
// folds a function whose arguments are all constants, and keeps a folded
// parameter marker as a deferred expression that the executor evaluates
// again: so a shape is evaluated once only where an argument is not a
// constant to the planner. The statements advisory sends on TiDB are the
// ones this test finds evaluated once.
func TestTiDBStatementShapes(t *testing.T) {
	tg := testdb.Get(t, testdb.TiDB)
	ctx := context.Background()
	pool, err := tg.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	name := lockName(t)

	gets := []struct {
		shape string
		sql   string
		args  []any
		once  bool // what advisory relies on
	}{
		{"SELECT", "SELECT GET_LOCK(?, ?)", []any{name, 1}, false},
		{"SELECT, two columns", "SELECT GET_LOCK(?, ?), CONNECTION_ID()", []any{name, 1}, false},
		{"SELECT FROM DUAL", "SELECT GET_LOCK(?, ?) FROM DUAL", []any{name, 1}, false},
		{"DO", "DO GET_LOCK(?, ?)", []any{name, 1}, false},
		{"SET @v", "SET @lockplugin_probe = GET_LOCK(?, ?)", []any{name, 1}, false},
		{"derived table", "SELECT GET_LOCK(t.n, t.s) FROM (SELECT ? AS n, ? AS s) AS t", []any{name, 1}, false},
		{"ANY_VALUE arguments", "SELECT GET_LOCK(ANY_VALUE(?), ANY_VALUE(?))", []any{name, 1}, true},
		{"ANY_VALUE arguments, two columns", "SELECT GET_LOCK(ANY_VALUE(?), ANY_VALUE(?)), CONNECTION_ID()", []any{name, 1}, true},
	}
	for _, g := range gets {
		for i := 0; i < 3; i++ { // the third run uses a cached plan
			if err := sendDrained(ctx, conn, g.sql, g.args...); err != nil {
				t.Fatalf("%s: %v", g.shape, err)
			}
			n := tidbRefs(t, ctx, conn)
			t.Logf("GET_LOCK, %s (run %d): %d hold(s)", g.shape, i+1, n)
			if g.once && n != 1 {
				t.Errorf("GET_LOCK, %s: %d holds after one statement, want 1", g.shape, n)
			}
		}
	}

	// The text protocol (go-sql-driver's interpolateParams): the values are
	// literals, folded once at planning and not evaluated again.
	text := testdb.Open(t, testdb.TiDB, func(dsn string) string { return dsn + "&interpolateParams=true" })
	tpool, err := text.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	tconn, err := tpool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tconn.Close()
	for i := 0; i < 3; i++ {
		if err := sendDrained(ctx, tconn, "SELECT GET_LOCK(?, ?)", name, 1); err != nil {
			t.Fatal(err)
		}
		t.Logf("GET_LOCK, SELECT, text protocol (run %d): %d hold(s)", i+1, tidbRefs(t, ctx, tconn))
	}

	take := "SELECT GET_LOCK(ANY_VALUE(?), ANY_VALUE(?))"
	releases := []struct {
		shape string
		sql   string
		once  bool
	}{
		{"SELECT", "SELECT RELEASE_LOCK(?)", false},
		{"ANY_VALUE argument", "SELECT RELEASE_LOCK(ANY_VALUE(?))", true},
		{"IS_FREE_LOCK, SELECT", "SELECT IS_FREE_LOCK(?)", false},
		{"IS_FREE_LOCK, ANY_VALUE argument", "SELECT IS_FREE_LOCK(ANY_VALUE(?))", true},
	}
	for _, r := range releases {
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				if err := sendDrained(ctx, conn, take, name, 1); err != nil {
					t.Fatal(err)
				}
			}
			var got sql.NullInt64
			if err := conn.QueryRowContext(ctx, r.sql, name).Scan(&got); err != nil {
				t.Fatalf("%s: %v", r.shape, err)
			}
			left := tidbRefs(t, ctx, conn)
			t.Logf("%s (run %d): answered %v, %d of 3 holds left", r.shape, i+1, got, left)
			if r.once && r.sql[7] == 'R' && (left != 2 || got.Int64 != 1) {
				t.Errorf("RELEASE_LOCK, %s: answered %v and left %d of 3 holds, want 1 and 2", r.shape, got, left)
			}
		}
	}
}

// sendDrained sends a statement as advisory does, reading its rows (a
// SELECT goes through QueryContext, as QueryRowContext does).
func sendDrained(ctx context.Context, conn *sql.Conn, query string, args ...any) error {
	if query[:6] != "SELECT" {
		_, err := conn.ExecContext(ctx, query, args...)
		return err
	}
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// tidbHolder is holder on TiDB, whose IS_USED_LOCK answers 1, not the
// holder's session id, for another session's lock (and waits a second to
// find out): it asks whether the name's row in mysql.advisory_locks is
// locked, with a NOWAIT read in a transaction it rolls back. -1: held.
func tidbHolder(t testing.TB, tg *testdb.Target, name string) int64 {
	t.Helper()
	tx := tg.Plain.Begin()
	if tx.Error != nil {
		t.Fatalf("who holds %q: %v", name, tx.Error)
	}
	defer tx.Rollback()
	var rows []int64
	err := tx.Raw("SELECT 1 FROM mysql.advisory_locks WHERE lock_name = ? FOR UPDATE NOWAIT", strings.ToLower(name)).Scan(&rows).Error
	switch {
	case dialects.IsLockNotAvailable(err):
		return -1
	case err != nil:
		t.Fatalf("who holds %q: %v", name, err)
	}
	return 0
}
