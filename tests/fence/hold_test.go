package fence_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestI16HoldAtLeast: a lease released right after it was taken is free
// at once without HoldAtLeast (the baseline: a fast job lets a late node
// in), and with HoldAtLeast(d) is refused to others until d after its
// acquire was sent, then free: on the table (every database), Redis and
// local stores.
func TestI16HoldAtLeast(t *testing.T) {
	const hold = 400 * time.Millisecond
	ctx := context.Background()
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if refusedOnTiDB(t, tg) {
			return
		}
		for _, sc := range storeCases(t, tg) {
			if tg.Kind() != testdb.SQLite && sc.name != "table" {
				continue // Redis and local once, under sqlite
			}
			t.Run(sc.name, func(t *testing.T) {
				m := lease.NewManager(sc.store, lease.PollInterval(10*time.Millisecond))
				for _, held := range []bool{false, true} {
					name := testdb.Unique(t, "i16_hold")
					var opts []lease.Option
					if held {
						opts = append(opts, lease.HoldAtLeast(hold))
					}
					sent := time.Now()
					l, err := m.Acquire(ctx, name, append(opts, lease.TTL(10*time.Second))...)
					noErr(t, err)
					noErr(t, l.Release(ctx))
					select {
					case <-l.Done():
					default:
						t.Fatal("Done open after Release")
					}
					other, err := m.Acquire(ctx, name, lease.TTL(10*time.Second))
					if !held {
						noErr(t, err, "baseline: released at once")
						noErr(t, other.Release(ctx))
						continue
					}
					isErr(t, err, lease.ErrNotAcquired)
					other, err = m.Acquire(ctx, name, lease.TTL(10*time.Second), lease.WaitAtMost(5*time.Second))
					noErr(t, err)
					got := time.Since(sent)
					want(t, got >= hold, "taken %v after the held acquire, before the %v hold", got, hold)
					t.Logf("%s/%s: free %v after the acquire (hold %v); without the hold: free at once", tg.Name, sc.name, got.Round(time.Millisecond), hold)
					noErr(t, other.Release(ctx))
				}
			})
		}
	})
}
