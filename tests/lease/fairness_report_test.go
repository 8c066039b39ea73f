package lease_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestFairnessReport reports, for one hot name taken in turn by 8 workers
// for a while on each store (I25_FAIRNESS_SECONDS, default 30), how long
// acquisitions waited: p50, p99, max, and how many waits ran out (the wait
// limit is 10 s, or half the run for a run under 20 s, at least 2 s);
// beside go-redsync on the same Redis and etcd's concurrency.Mutex on the
// same etcd cluster, then a table of all of them (the figures
// BENCHMARKS.md records, from make fairness: 30 s). It asserts the checker
// (no overlap, no fence regression) and, on the stores that queue their
// waiters (local within a process, etcd), that no wait ran out. make test
// runs it short (I25_FAIRNESS_SECONDS=4 in the Makefile: those assertions,
// not the figures). Skipped with -short.
func TestFairnessReport(t *testing.T) {
	if testing.Short() {
		t.Skip("a report of several minutes")
	}
	run := 30 * time.Second
	if s, err := strconv.Atoi(os.Getenv("I25_FAIRNESS_SECONDS")); err == nil && s > 0 {
		run = time.Duration(s) * time.Second
	}
	const workers, hold = 8, time.Millisecond
	// A short run (make test's) waits at most half of it, so that a
	// starved waiter still shows as a wait that ran out.
	wait := min(10*time.Second, max(2*time.Second, run/2))
	type row struct {
		store                 string
		n, minW, maxW, ranOut int
		p50, p99, most        time.Duration
	}
	var rows []row
	defer func() {
		if len(rows) == 0 {
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "one hot name, %d workers, %v per store, wait limit %v:\n\n", workers, run, wait)
		b.WriteString("| store | acquisitions | per s | wait p50 | wait p99 | max wait | waits ran out | per worker min-max |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %d | %.1f | %v | %v | %v | %d | %d-%d |\n", r.store, r.n, float64(r.n)/run.Seconds(), r.p50, r.p99, r.most, r.ranOut, r.minW, r.maxW)
		}
		t.Log("\n" + b.String())
		// make bench's report takes the table from here.
		if out := os.Getenv("I25_FAIRNESS_OUT"); out != "" {
			if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
				t.Errorf("writing the table to %s: %v", out, err)
			}
		}
	}()
	name := namePrefix + "i25_fair_" + strconv.FormatInt(time.Now().UnixNano(), 36)

	report := func(t *testing.T, what string, take func(ctx context.Context, w int) (fence int64, release func(), err error)) {
		h := &holders{}
		rec := hotName(workers, run, wait, 10*time.Millisecond, take, func(fence int64) {
			h.enter(fence)
			time.Sleep(hold)
			h.leave()
		})
		waits, perWorker, ranOut, failed := rec.waits, rec.perWorker, rec.ranOut, rec.failed
		slices.Sort(waits)
		pct := func(p float64) time.Duration {
			if len(waits) == 0 {
				return 0
			}
			return waits[min(len(waits)-1, int(p*float64(len(waits))))].Round(time.Millisecond)
		}
		t.Logf("%s: %d acquisitions in %v (%.1f/s), per worker %v; wait p50 %v, p99 %v, max %v; %d waits ran out, %d other errors; %d overlaps, %d fence regressions",
			what, len(waits), run, float64(len(waits))/run.Seconds(), perWorker, pct(0.5), pct(0.99), pct(1), ranOut, failed, h.overlaps, h.regressed)
		rows = append(rows, row{store: what, n: len(waits), minW: slices.Min(perWorker), maxW: slices.Max(perWorker),
			ranOut: ranOut, p50: pct(0.5), p99: pct(0.99), most: pct(1)})
		if h.overlaps != 0 {
			t.Errorf("%s: %d overlaps", what, h.overlaps)
		}
		// Where the store queues its waiters (the local store within a
		// process, etcd by revision), none may starve past the wait limit
		// while the others acquire.
		if (what == "local" || what == "etcd") && ranOut != 0 {
			t.Errorf("%s queues its waiters, yet %d waits ran out after %v", what, ranOut, wait)
		}
		if h.regressed != 0 && what != "baseline=redsync" && what != "baseline=concurrency.Mutex" {
			t.Errorf("%s: %d fence regressions", what, h.regressed)
		}
	}
	viaManager := func(m *lease.Manager) func(ctx context.Context, _ int) (int64, func(), error) {
		return func(ctx context.Context, _ int) (int64, func(), error) {
			l, err := m.Acquire(ctx, name, lease.TTL(10*time.Second), lease.WaitAtMost(wait))
			if err != nil {
				return 0, nil, err
			}
			return l.Fence(), func() { _ = l.Release(context.Background()) }, nil
		}
	}

	t.Run("local", func(t *testing.T) {
		s, err := lease.NewLocalStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		report(t, "local", viaManager(lease.NewManager(s)))
	})
	t.Run("redis", func(t *testing.T) {
		s, _ := redisStore(t)
		report(t, "redis", viaManager(lease.NewManager(s)))
	})
	t.Run("baseline=redsync", func(t *testing.T) {
		rs := redsync.New(goredis.NewPool(testdb.Redis(t)))
		var seq int64
		var mu sync.Mutex
		report(t, "baseline=redsync", func(ctx context.Context, _ int) (int64, func(), error) {
			m := rs.NewMutex(redisPrefix+name, redsync.WithExpiry(10*time.Second), redsync.WithTries(100))
			if err := m.LockContext(ctx); err != nil {
				return 0, nil, err
			}
			mu.Lock()
			seq++ // redsync has no fence: a counter taken inside the lock
			f := seq
			mu.Unlock()
			return f, func() { _, _ = m.Unlock() }, nil
		})
	})
	t.Run("table-postgres", func(t *testing.T) {
		tg := testdb.Open(t, testdb.Postgres, nil)
		report(t, "table-postgres", viaManager(lease.NewManager(tableStore(t, tg.DB))))
	})
	t.Run("etcd", func(t *testing.T) {
		c := servers.StartEtcdCluster(t)
		ms, _ := i25EtcdWorkers(t, c, 1)
		report(t, "etcd", viaManager(ms[0]))
		t.Run("baseline=concurrency.Mutex", func(t *testing.T) {
			sessions := make([]*concurrency.Session, workers)
			for w := range sessions {
				s, err := concurrency.NewSession(etcdClient(t, c), concurrency.WithTTL(10))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				sessions[w] = s
			}
			report(t, "baseline=concurrency.Mutex", func(ctx context.Context, w int) (int64, func(), error) {
				m := concurrency.NewMutex(sessions[w], "i25-fair-mutex/"+name)
				if err := m.Lock(ctx); err != nil {
					return 0, nil, err
				}
				return m.Header().Revision, func() { _ = m.Unlock(context.Background()) }, nil
			})
		})
	})
}
