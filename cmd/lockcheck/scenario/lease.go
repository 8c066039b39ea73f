package scenario

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// LeaseExclusive runs the scenario: Workers goroutines Do one lease name with a wait, Rounds
// times each; never two inside fn at once.
//
// fn counts the goroutines inside it and increments a shared counter by a
// split read and write (atomic each, so the race detector stays quiet,
// but together a lost update whenever two run at once). The guarantee
// holds when no fn ever saw another inside, every Do ran, and the counter
// reached Workers×Rounds. The lease name is cfg.Prefix+"-lease".
func LeaseExclusive(ctx context.Context, store lease.Store, cfg Config) (Result, error) {
	cfg = cfg.Defaults()
	name := cfg.Prefix + "-lease"
	m := lease.NewManager(store, lease.PollInterval(5*time.Millisecond))
	var inside, most, overlaps, runs, counter atomic.Int64
	fn := func(context.Context) error {
		n := inside.Add(1)
		defer inside.Add(-1)
		if n > 1 {
			overlaps.Add(1)
		}
		for {
			old := most.Load()
			if n <= old || most.CompareAndSwap(old, n) {
				break
			}
		}
		v := counter.Load()
		time.Sleep(100 * time.Microsecond) // the protected work
		counter.Store(v + 1)
		runs.Add(1)
		return nil
	}
	errs, elapsed := Race(cfg.Workers, func(int) error {
		for range cfg.Rounds {
			if err := m.Do(ctx, name, fn, lease.WaitAtMost(time.Minute), lease.TTL(time.Minute)); err != nil {
				return err
			}
		}
		return nil
	})
	want := int64(cfg.Workers * cfg.Rounds)
	res := Result{
		Scenario: "lease / Do on one name",
		Expected: fmt.Sprintf("1 inside fn at a time, %d runs, counter %d", want, want),
		Observed: fmt.Sprintf("max %d inside fn at once, %d overlaps, %d runs, counter %d (%d lost)",
			most.Load(), overlaps.Load(), runs.Load(), counter.Load(), runs.Load()-counter.Load()),
		Lost:    int(overlaps.Load()),
		Ops:     int(runs.Load()),
		Elapsed: elapsed,
	}
	res.OK = most.Load() <= 1 && overlaps.Load() == 0 && runs.Load() == want && counter.Load() == want
	return res, FirstError(errs)
}
