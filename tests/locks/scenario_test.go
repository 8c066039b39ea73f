package locks

import (
	"testing"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

var scenarioConfig = scenario.Config{Workers: 8, Rounds: 25, Prefix: "lk"}

// TestLostUpdates: 8 goroutines doing read-modify-write on one counter lose
// updates without a lock, and lose none with FOR UPDATE or with a
// database-computed UPDATE.
func TestLostUpdates(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		ctx := t.Context()
		want := scenarioConfig.Workers * scenarioConfig.Rounds

		base, err := scenario.LostUpdateUnprotected(ctx, tg.Plain, scenarioConfig)
		if err != nil {
			t.Fatalf("unprotected: %v", err)
		}
		t.Logf("unprotected: %s in %v", base.Observed, base.Elapsed)
		if base.Lost <= 0 {
			t.Fatalf("the unprotected baseline lost no update (%s): the scenario cannot show anything", base.Observed)
		}

		locked, err := scenario.LostUpdateForUpdate(ctx, tg.DB, scenarioConfig)
		if err != nil {
			t.Fatalf("FOR UPDATE: %v", err)
		}
		if tg.Is(dialects.SQLite) {
			if locked.Unsupported == "" {
				t.Fatalf("FOR UPDATE on SQLite must report Unsupported, got %+v", locked)
			}
			t.Logf("FOR UPDATE: not supported: %s", locked.Unsupported)
		} else {
			t.Logf("FOR UPDATE: %s in %v", locked.Observed, locked.Elapsed)
			if locked.Lost != 0 || !locked.OK || locked.Ops != want {
				t.Fatalf("FOR UPDATE lost updates: %+v", locked)
			}
		}

		expr, err := scenario.LostUpdateExpr(ctx, tg.DB, scenarioConfig)
		if err != nil {
			t.Fatalf("UPDATE n = n + 1: %v", err)
		}
		t.Logf("UPDATE n = n + 1: %s in %v", expr.Observed, expr.Elapsed)
		if expr.Lost != 0 || !expr.OK {
			t.Fatalf("UPDATE n = n + 1 lost updates: %+v", expr)
		}
	})
}

// TestWorkQueue: 8 workers claim 2,000 jobs in batches of 10 with SKIP
// LOCKED; every job is claimed exactly once. Without the lock, the same
// claims take jobs twice.
func TestWorkQueue(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		small := scenarioConfig
		small.Rounds = 3
		base, err := scenario.QueueUnprotected(t.Context(), tg.Plain, small)
		if err != nil {
			t.Fatalf("unprotected queue: %v", err)
		}
		t.Logf("unprotected: %s in %v", base.Observed, base.Elapsed)
		if base.Lost <= 0 {
			t.Fatalf("the unprotected queue claimed no job twice (%s): the scenario cannot show anything", base.Observed)
		}

		r, err := scenario.SkipLockedQueue(t.Context(), tg.DB, scenarioConfig)
		if err != nil {
			t.Fatal(err)
		}
		if tg.Dialect.Require(dialects.SkipLocked) != nil {
			if r.Unsupported == "" {
				t.Fatalf("SKIP LOCKED on %s must report Unsupported, got %+v", tg.Dialect, r)
			}
			t.Logf("not supported: %s", r.Unsupported)
			return
		}
		t.Logf("%s in %v (%.0f claims/s)", r.Observed, r.Elapsed, r.OpsPerSecond())
		if r.Ops != 2000 || r.Lost != 0 || !r.OK {
			t.Fatalf("work queue: %+v", r)
		}
	})
}
