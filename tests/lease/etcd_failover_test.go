package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/leasetest"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
)

// holders runs workers that loop Manager.Do on one name, each fn holding
// the lease for hold (or until its context ends), and counts what a lease
// must prevent: two fns inside at once, a fence not above the one before.
type holders struct {
	mu        sync.Mutex
	inside    int
	overlaps  int
	runs      int
	lost      int // Do ended in ErrLeaseLost
	failed    int // Do failed without running fn (store error, not acquired)
	regressed int // a fence not above the previous holder's
	last      int64
	lastIn    time.Time
	gap       time.Duration // the longest time between two fns' starts
}

func (h *holders) fn(hold time.Duration) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		l, _ := lease.FromContext(ctx)
		h.mu.Lock()
		if h.inside > 0 {
			h.overlaps++
		}
		h.inside++
		h.runs++
		if !h.lastIn.IsZero() {
			h.gap = max(h.gap, time.Since(h.lastIn))
		}
		h.lastIn = time.Now()
		if l.Fence() <= h.last {
			h.regressed++
		}
		h.last = max(h.last, l.Fence())
		h.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(hold):
		}
		h.mu.Lock()
		h.inside--
		h.mu.Unlock()
		return nil
	}
}

// run starts a worker per Manager until stop closes, and waits for them.
func (h *holders) run(ms []*lease.Manager, name string, stop <-chan struct{}, opts ...lease.Option) {
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := m.Do(context.Background(), name, h.fn(150*time.Millisecond), opts...)
				h.mu.Lock()
				switch {
				case err == nil:
				case errors.Is(err, lease.ErrLeaseLost):
					h.lost++
				default:
					h.failed++
				}
				h.mu.Unlock()
				if err != nil && !errors.Is(err, lease.ErrLeaseLost) {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
}

func (h *holders) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs
}

func (h *holders) isInside() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inside > 0
}

// waitInside waits up to d for a fn to be running.
func (h *holders) waitInside(d time.Duration) bool {
	end := time.Now().Add(d)
	for !h.isInside() {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

func (h *holders) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprintf("%d runs of fn, %d overlaps, %d fence regressions, %d lost leases, %d failed acquires, longest gap %v",
		h.runs, h.overlaps, h.regressed, h.lost, h.failed, h.gap.Round(time.Millisecond))
}

// TestEtcdHoldersCanOverlap: the holders harness catches overlap, on a
// store that grants everyone (so a zero below means something).
func TestEtcdHoldersCanOverlap(t *testing.T) {
	s := leasetest.GrantAll()
	var h holders
	stop := make(chan struct{})
	time.AfterFunc(500*time.Millisecond, func() { close(stop) })
	h.run([]*lease.Manager{lease.NewManager(s), lease.NewManager(s), lease.NewManager(s)}, uniqueName(t), stop,
		lease.TTL(3*time.Second), lease.KeepAlive(time.Second), lease.WaitAtMost(10*time.Second))
	t.Log("grant-all store: " + h.String())
	if h.overlaps == 0 {
		t.Fatal("no overlap on a store that grants everyone: the harness cannot catch one")
	}
}

// TestEtcdLeaderKills: four workers on two clients loop Do on one name
// (TTL 2 s, KeepAlive 500 ms, CallTimeout 1 s, each fn holding ~150 ms, the waiters watching)
// while the test kills the etcd leader with SIGKILL while a fn runs,
// waits for a new leader, restarts the killed member, and waits for two
// more runs of fn, 5 times. No two fns may run at once, every fence must
// be above the one before, and the lease must be granted again.
func TestEtcdLeaderKills(t *testing.T) {
	t.Parallel() // its own servers; mostly waiting for failovers
	c := servers.StartEtcdCluster(t)
	name := uniqueName(t)
	var ms []*lease.Manager
	for range 2 {
		s := etcdStore(t, c)
		m := lease.NewManager(s, lease.CallTimeout(time.Second))
		ms = append(ms, m, m)
	}
	var h holders
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.run(ms, name, stop, lease.TTL(2*time.Second), lease.KeepAlive(500*time.Millisecond), lease.WaitAtMost(20*time.Second))
	}()
	const kills = 10
	heldAtKill := 0
	var slowest time.Duration
	for i := range kills {
		// Kill while a fn runs, i.e. while the lease is held.
		if !h.waitInside(10 * time.Second) {
			t.Fatalf("kill %d: no holder within 10 s: %s", i+1, h.String())
		}
		leader, err := c.WaitLeader(20 * time.Second)
		if err != nil {
			t.Fatalf("kill %d: %v", i+1, err)
		}
		runs := h.count()
		if h.isInside() {
			heldAtKill++
		}
		killed := time.Now()
		c.Members[leader].Kill()
		// Two members keep a quorum; on a starved machine their election
		// can take a while, which is not what this test measures.
		if _, err := c.WaitLeader(45 * time.Second); err != nil {
			t.Fatalf("kill %d: no new leader: %v", i+1, err)
		}
		c.Members[leader].Restart()
		// Progress: two more runs of fn after the kill.
		for h.count() < runs+2 {
			if time.Since(killed) > 20*time.Second {
				t.Fatalf("kill %d: the lease was not granted again within 20 s: %s", i+1, h.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		slowest = max(slowest, time.Since(killed))
	}
	time.Sleep(time.Second)
	close(stop)
	<-done
	t.Logf("%d leader kills: %s", kills, h.String())
	t.Logf("%d of %d kills while a holder ran fn; slowest recovery (two more runs of fn) %v", heldAtKill, kills, slowest.Round(time.Millisecond))
	if h.overlaps != 0 || h.regressed != 0 {
		t.Fatalf("%d leader kills: %s", kills, h.String())
	}
}
