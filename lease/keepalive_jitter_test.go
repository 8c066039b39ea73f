package lease_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// countingStore is a memStore that records when each refresh arrives.
type countingStore struct {
	*memStore
	mu        sync.Mutex
	refreshes []time.Time
}

func (s *countingStore) Refresh(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	s.refreshes = append(s.refreshes, time.Now())
	s.mu.Unlock()
	return s.memStore.Refresh(ctx, name, owner, ttl)
}

// TestKeepAliveSpreadsRefreshesLive: 10k leases taken at once through Do
// with KeepAlive(3s) on an in-memory store, held 15 s; it reports the
// refreshes per 1 s window as the store saw them. It asserts nothing: on
// a loaded machine a stalled process fires its late timers together, which
// says nothing of the schedule (TestRefreshScheduleSpreads checks that on
// a virtual clock).
func TestKeepAliveSpreadsRefreshesLive(t *testing.T) {
	if testing.Short() {
		t.Skip("15 s")
	}
	const leases, interval, run = 10000, 3 * time.Second, 15 * time.Second
	s := &countingStore{memStore: newMem()}
	m := lease.NewManager(s)
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, leases)
	for i := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- m.Do(context.Background(), "i25_ka_"+strconv.Itoa(i), func(ctx context.Context) error {
				select {
				case <-stop:
				case <-ctx.Done():
				}
				return nil
			}, lease.TTL(10*time.Second), lease.KeepAlive(interval))
		}()
	}
	time.Sleep(run)
	close(stop)
	wg.Wait()
	close(errs)
	// A lease lost because this process was not scheduled for longer than
	// its safety margin (-race on a loaded machine) is reported, not
	// failed: the schedule is TestRefreshScheduleSpreads's to check.
	lost := 0
	for err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, lease.ErrLeaseLost):
			lost++
		default:
			t.Fatalf("Do: %v", err)
		}
	}
	if lost > 0 {
		t.Logf("%d of %d leases lost (their refresh ran late on this machine)", lost, leases)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	windows := make([]int, int(run/time.Second))
	for _, at := range s.refreshes {
		if w := int(at.Sub(start) / time.Second); w < len(windows) {
			windows[w]++
		}
	}
	total := 0
	for _, n := range windows {
		total += n
	}
	mean := float64(total) / float64(len(windows))
	t.Logf("%d refreshes of %d leases in %v; per 1 s window: %v (mean %.0f)", len(s.refreshes), leases, run, windows, mean)
}
