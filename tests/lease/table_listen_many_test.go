package lease_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore/pgnotify"
)

// TestListenManyWaitedNames: one process whose waiters wait on many
// distinct names at once, each held by another owner: its one LISTEN
// connection listens on a channel per name (PostgreSQL keeps a backend's
// channels in a list, which each LISTEN and each delivered notification
// walks). The holders then release every name, one after the other, and
// each waiter must get its own name, and the waiting process must have
// read a notification for each (PollInterval is a minute; a notification
// lost would leave its waiter to the store's own check, at most 5 s
// later, which the reported lag would show). At
// 50, 500 and 2,000 names it reports the time per release (a notifying
// commit, one at a time), how long after the last release the last
// waiter got its name, and the statements per name; the pool takes at
// most 8 connections of the shared server however many names it waits on.
func TestListenManyWaitedNames(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 waiters")
	}
	sizes := []int{50, 500, 2000}
	e := newListenEnv(t)
	e.sql.SetMaxOpenConns(8)
	var received atomic.Int64 // notifications the waiting store's connection read
	waiting, err := sqlstore.New(e.db, sqlstore.Table(e.table), sqlstore.Retention(-1), sqlstore.Listen(func(ctx context.Context, dc any) (string, string, error) {
		ch, payload, err := pgnotify.Receive(ctx, dc)
		if err == nil {
			received.Add(1)
		}
		return ch, payload, err
	}))
	noErr(t, err)
	holding := e.store(t, true) // a release announces itself only with Listen; it never waits, so it LISTENs on nothing
	var entered atomic.Int64    // waits begun (WaitFree called)
	waiters := lease.NewManager(enteringWaiter{waiting, &entered}, lease.PollInterval(time.Minute))
	holders := lease.NewManager(holding)
	ctx := context.Background()
	for _, n := range sizes {
		uniq := strconv.FormatInt(time.Now().UnixNano(), 36)
		name := func(i int) string { return fmt.Sprintf("%smany_%s_%d", namePrefix, uniq, i) }
		held := make([]*lease.Lease, n)
		for i := range held {
			l, err := holders.Acquire(ctx, name(i), lease.TTL(2*time.Minute))
			noErr(t, err, "a holder's acquire")
			held[i] = l
		}
		var got, failed atomic.Int64
		var last atomic.Int64 // UnixNano of the latest grant
		var firstErr sync.Once
		var wg sync.WaitGroup
		entered.Store(0)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := waiters.Acquire(ctx, name(i), lease.TTL(time.Minute), lease.WaitAtMost(45*time.Second))
				if err != nil {
					failed.Add(1)
					firstErr.Do(func() { t.Errorf("%d names: waiter of %s: %v", n, name(i), err) })
					return
				}
				now := time.Now().UnixNano()
				for {
					if old := last.Load(); old >= now || last.CompareAndSwap(old, now) {
						break
					}
				}
				got.Add(1)
				_ = l.Release(ctx)
			}()
		}
		// Every waiter was refused and began to wait; its LISTEN has run
		// once the waiting process's statements stop growing.
		settle := time.Now().Add(time.Minute)
		for entered.Load() < int64(n) && failed.Load() == 0 {
			if time.Now().After(settle) {
				t.Fatalf("%d names: %d of %d waiters began to wait within a minute", n, entered.Load(), n)
			}
			time.Sleep(50 * time.Millisecond)
		}
		for prev := int64(-1); ; {
			time.Sleep(300 * time.Millisecond)
			cur := e.n.Load()
			if cur == prev || time.Now().After(settle) {
				break
			}
			prev = cur
		}
		before, heard := e.n.Load(), received.Load()
		start := time.Now()
		for _, l := range held {
			noErr(t, l.Release(ctx), "a holder's release")
		}
		released := time.Since(start)
		wg.Wait()
		stmts := e.n.Load() - before
		if got.Load() != int64(n) {
			t.Fatalf("%d names: %d waiters got their name, %d failed", n, got.Load(), failed.Load())
		}
		if h := received.Load() - heard; h < int64(n) {
			t.Errorf("%d names: the waiting process read %d notifications, want one per name at least", n, h)
		}
		lag := time.Duration(last.Load() - start.Add(released).UnixNano())
		t.Logf("%5d names waited on by one process: released one after the other in %v (%.0f µs each), the last grant %v after the last release; %.1f statements per name (its release included)",
			n, released.Round(time.Millisecond), float64(released.Microseconds())/float64(n), lag.Round(time.Millisecond), float64(stmts)/float64(n))
	}
}

// enteringWaiter counts the waits begun on its store.
type enteringWaiter struct {
	*sqlstore.Store
	entered *atomic.Int64
}

func (w enteringWaiter) WaitFree(ctx context.Context, name string) error {
	w.entered.Add(1)
	return w.Store.WaitFree(ctx, name)
}
