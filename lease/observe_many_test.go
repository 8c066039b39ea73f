package lease_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/observe"
)

// TestTenThousandObservedLeases: one process holding 10k leases with an
// Observer, each with its safety timer armed (a pooled time.Timer, not a
// goroutine), three times over with new names. Held, released: every
// lease reports Held and Released once, none Lost, no goroutine per lease,
// and the heap does not grow with the names' history (the timer pool is a
// sync.Pool, emptied by the collector).
// Held past their deadline without a refresh: every one reports Lost
// exactly once, from its timer, and its context ends.
func TestTenThousandObservedLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("10k leases")
	}
	const n = 10000
	var held, released, lost, other atomic.Int64
	obs := observe.Func(func(e observe.Event) {
		switch e.Kind {
		case observe.Held:
			held.Add(1)
		case observe.Released:
			released.Add(1)
		case observe.Lost:
			lost.Add(1)
		case observe.WaitStarted, observe.WaitEnded:
		default:
			other.Add(1)
		}
	})
	m := lease.NewManager(&forgetfulStore{held: map[string]string{}}, lease.WithObserver(obs))
	ctx := context.Background()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC() // a sync.Pool's items survive one collection
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	g0, h0 := runtime.NumGoroutine(), heap()

	// Three rounds of 10k new names each, held at once and released: the
	// heap after the third is no larger than after the first (the runtime
	// keeps its timer heap's capacity, sized by the most timers armed at
	// once, not by the history).
	var gHeld int
	var hHeld, hFirst, hLast uint64
	for round := range 3 {
		leases := make([]*lease.Lease, n)
		for i := range leases {
			l, err := m.Acquire(ctx, "i27_obs_"+strconv.Itoa(round)+"_"+strconv.Itoa(i), lease.TTL(time.Hour))
			if err != nil {
				t.Fatalf("acquire %d: %v", i, err)
			}
			leases[i] = l
		}
		gHeld, hHeld = runtime.NumGoroutine(), heap()
		for i, l := range leases {
			if err := l.Release(ctx); err != nil {
				t.Fatalf("release %d: %v", i, err)
			}
		}
		leases = nil
		hLast = heap()
		if round == 0 {
			hFirst = hLast
		}
	}
	gAfter := runtime.NumGoroutine()
	t.Logf("%d observed leases, 3 rounds: goroutines %d before, %d held, %d released; heap %d KiB before, %d KiB held, %d KiB after the first round, %d KiB after the third",
		n, g0, gHeld, gAfter, h0>>10, hHeld>>10, hFirst>>10, hLast>>10)
	if held.Load() != 3*n || released.Load() != 3*n || lost.Load() != 0 || other.Load() != 0 {
		t.Fatalf("events: %d Held, %d Released, %d Lost, %d other; want %d, %d, 0, 0", held.Load(), released.Load(), lost.Load(), other.Load(), 3*n, 3*n)
	}
	if gHeld > g0+10 {
		t.Errorf("%d goroutines with %d leases held, %d before: a goroutine per lease", gHeld, n, g0)
	}
	if hFirst > h0 && hLast > hFirst+(hHeld-h0)/20 {
		t.Errorf("heap %d KiB after the third round, %d KiB after the first (%d KiB with %d held): released leases' state is kept", hLast>>10, hFirst>>10, hHeld>>10, n)
	}

	// Past their deadline, not refreshed: Lost once each, from the timers.
	held.Store(0)
	leases := make([]*lease.Lease, n)
	for i := range leases {
		l, err := m.Acquire(ctx, "i27_obs_lost_"+strconv.Itoa(i), lease.TTL(300*time.Millisecond))
		if err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
		leases[i] = l
	}
	for i, l := range leases {
		select {
		case <-l.Done():
		case <-time.After(30 * time.Second):
			t.Fatalf("lease %d: its context did not end 30 s after its deadline", i)
		}
	}
	for i, l := range leases {
		if err := l.Release(ctx); err != nil && !errors.Is(err, lease.ErrLeaseLost) {
			t.Fatalf("release of lost lease %d: %v", i, err)
		}
	}
	if held.Load() != n || lost.Load() != n {
		t.Fatalf("short leases: %d Held, %d Lost; want %d each", held.Load(), lost.Load(), n)
	}
}

// forgetfulStore keeps only the names held, so that what a test measures
// of the heap is the Manager's (memStore keeps every name's fence). Its
// fences come from one counter; expiry is left to the Manager.
type forgetfulStore struct {
	mu    sync.Mutex
	held  map[string]string
	fence int64
}

func (s *forgetfulStore) Acquire(_ context.Context, name, owner string, _ time.Duration) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.held[name]; ok && o != owner {
		return 0, false, nil
	}
	s.held[name] = owner
	s.fence++
	return s.fence, true, nil
}

func (s *forgetfulStore) Release(_ context.Context, name, owner string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[name] != owner {
		return false, nil
	}
	delete(s.held, name)
	if len(s.held) == 0 {
		s.held = map[string]string{} // a map keeps its buckets once emptied
	}
	return true, nil
}

func (s *forgetfulStore) Refresh(_ context.Context, name, owner string, _ time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[name] == owner, nil
}
