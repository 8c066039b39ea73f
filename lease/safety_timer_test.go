package lease_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/observe"
)

// TestSafetyTimersReusedOnlyByTheirLease: the safety timers of observed
// leases are pooled. Leases released before their deadline give theirs
// back; the leases that take them next must hear of no loss at those old
// deadlines, and a lease that is not released must still be reported lost
// at its own.
func TestSafetyTimersReusedOnlyByTheirLease(t *testing.T) {
	var mu sync.Mutex
	lost := map[string]int{}
	m := lease.NewManager(newMem(), lease.WithObserver(observe.Func(func(e observe.Event) {
		if e.Kind == observe.Lost {
			mu.Lock()
			lost[e.Name]++
			mu.Unlock()
		}
	})))
	ctx := context.Background()
	// Short-lived leases, released at once, on several goroutines: their
	// timers, stopped, go back to the pool.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				l, err := m.Acquire(ctx, "short", lease.TTL(400*time.Millisecond), lease.WaitAtMost(time.Second))
				if err != nil {
					t.Error(g, i, err)
					return
				}
				if err := l.Release(ctx); err != nil {
					t.Error(g, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Long leases take those timers; the short leases' deadlines pass.
	var long []*lease.Lease
	for i := range 20 {
		l, err := m.Acquire(ctx, "long"+string(rune('a'+i)), lease.TTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		long = append(long, l)
	}
	expiring, err := m.Acquire(ctx, "expiring", lease.TTL(400*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-expiring.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the unreleased lease's safety deadline passed unreported")
	}
	time.Sleep(100 * time.Millisecond) // a stray timer of the short leases would fire about now too
	mu.Lock()
	defer mu.Unlock()
	if len(lost) != 1 || lost["expiring"] != 1 {
		t.Fatalf("losses reported: %v; want only the unreleased lease's, once", lost)
	}
	for _, l := range long {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
