package locks

import (
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/lockplugin/lockplugin/tests/scenario"
)

// i13Config sizes the issue-13 scenarios: 8 workers, 2,000 jobs.
var i13Config = scenario.Config{Workers: 8, Rounds: 25, Prefix: "i13"}

// TestClaimQueue: 8 workers claim 2,000 jobs with lockplugin.Claim, 10 at
// a time, on every reachable database; each job is claimed exactly once
// and comes back as claimed. The same claims without a lock (the
// baseline: read, then mark) take jobs more than once.
func TestClaimQueue(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		small := i13Config
		small.Rounds = 3
		base, err := scenario.QueueUnprotected(t.Context(), tg.Plain, small)
		if err != nil {
			t.Fatalf("unprotected queue: %v", err)
		}
		t.Logf("no lock: %s in %v", base.Observed, base.Elapsed)
		if base.Lost <= 0 {
			t.Fatalf("the unprotected queue claimed no job twice (%s): the scenario cannot show anything", base.Observed)
		}

		r, err := scenario.ClaimQueue(t.Context(), tg.DB, i13Config)
		if err != nil {
			t.Fatal(err)
		}
		if tg.Dialect.Require(dialects.QueueClaim) != nil {
			if r.Unsupported == "" {
				t.Fatalf("Claim on %s must report Unsupported, got %+v", tg.Dialect, r)
			}
			t.Logf("not supported: %s", r.Unsupported)
			return
		}
		t.Logf("Claim: %s in %v (%.0f jobs/s)", r.Observed, r.Elapsed, r.OpsPerSecond())
		if r.Ops != 2000 || r.Lost != 0 || !r.OK {
			t.Fatalf("Claim: %+v", r)
		}
	})
}
