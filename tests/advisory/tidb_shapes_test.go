package advisory_test

import (
	"context"
	"database/sql"
	"testing"

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
			if _, err := conn.ExecContext(ctx, g.sql, g.args...); err != nil {
				t.Fatalf("%s: %v", g.shape, err)
			}
			n := tidbRefs(t, ctx, conn)
			t.Logf("GET_LOCK, %s (run %d): %d hold(s)", g.shape, i+1, n)
			if g.once && n != 1 {
				t.Errorf("GET_LOCK, %s: %d holds after one statement, want 1", g.shape, n)
			}
		}
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
				if _, err := conn.ExecContext(ctx, take, name, 1); err != nil {
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
