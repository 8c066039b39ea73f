package election

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// countingStore is a local store that counts acquire attempts and, as a
// Holder, answers from what its candidates took (held while a lease
// taken through it is not released), counting reads.
type countingStore struct {
	*lease.LocalStore
	acquires, reads atomic.Int64
	mu              sync.Mutex
	fence           int64
	held            bool
}

func (c *countingStore) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	c.acquires.Add(1)
	f, ok, err := c.LocalStore.Acquire(ctx, name, owner, ttl)
	if ok {
		c.mu.Lock()
		c.fence, c.held = f, true
		c.mu.Unlock()
	}
	return f, ok, err
}

func (c *countingStore) Release(ctx context.Context, name, owner string) (bool, error) {
	ok, err := c.LocalStore.Release(ctx, name, owner)
	if ok {
		c.mu.Lock()
		c.held = false
		c.mu.Unlock()
	}
	return ok, err
}

func (c *countingStore) Holder(ctx context.Context, name string) (int64, bool, error) {
	c.reads.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fence, c.held, nil
}

// closingWatcher is a countingStore whose release watches end at once,
// counting how often Campaign starts one.
type closingWatcher struct {
	*countingStore
	watches atomic.Int64
}

func (w *closingWatcher) WatchRelease(ctx context.Context, name string) (<-chan struct{}, error) {
	w.watches.Add(1)
	ch := make(chan struct{})
	close(ch)
	return ch, nil
}

// TestIdleCandidatesRead: with default options (TTL 1 s: a check every
// 100 ms), 5 candidates wait 1 s behind a leader: they read the holder
// about 10 times a second each and make no acquire attempt; when the
// leader resigns, one of them wins (logged: within the check interval). With a
// Watcher whose watches end at once, Campaign does not spin: it starts
// one watch per check, not one per loop.
func TestIdleCandidatesRead(t *testing.T) {
	for _, watching := range []bool{false, true} {
		ls, err := lease.NewLocalStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer ls.Close()
		cs := &countingStore{LocalStore: ls}
		var store lease.Store = cs
		var cw *closingWatcher
		if watching {
			cw = &closingWatcher{countingStore: cs}
			store = cw
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		leader, err := New(store, "i25-idle", TTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		term, err := leader.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		won := make(chan *Term, 5)
		for range 5 {
			e, err := New(store, "i25-idle", TTL(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				if t, err := e.Campaign(ctx); err == nil {
					won <- t
				}
			}()
		}
		time.Sleep(100 * time.Millisecond) // every candidate made its first attempt
		a0, r0 := cs.acquires.Load(), cs.reads.Load()
		var w0 int64
		if cw != nil {
			w0 = cw.watches.Load()
		}
		time.Sleep(time.Second)
		a, r := cs.acquires.Load()-a0, cs.reads.Load()-r0
		if a != 0 {
			t.Errorf("watching=%v: %d acquire attempts by idle candidates, want 0 (they read the holder)", watching, a)
		}
		if r < 5 || r > 100 {
			t.Errorf("watching=%v: %d holder reads by 5 idle candidates in 1 s, want about 50", watching, r)
		}
		if cw != nil {
			if n := cw.watches.Load() - w0; n > r+10 {
				t.Errorf("%d watches started for %d checks: Campaign spins on an ended watch", n, r)
			}
		}
		start := time.Now()
		if err := term.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		var took time.Duration
		select {
		case t2 := <-won:
			took = time.Since(start)
			_ = t2.Resign(ctx)
		case <-time.After(5 * time.Second):
			t.Fatalf("watching=%v: no candidate won within 5 s of the resign", watching)
		}
		cancel()
		t.Logf("watching=%v: 5 idle candidates, 1 s: %d acquire attempts, %d holder reads; a candidate won %v after the resign", watching, a, r, took)
	}
}
