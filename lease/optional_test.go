package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// roundingStore is memStore as a GrantStore and Waiter: it grants TTLs
// rounded up to whole seconds (as etcd does), counts each kind of call,
// and checks that the handle it gave is the one handed back.
type roundingStore struct {
	*memStore
	plain, grants, refreshes, releases, waits atomic.Int64
	badHandle                                 atomic.Int64
}

type roundingHandle struct{ n int64 }

func roundUp(ttl time.Duration) time.Duration {
	return (ttl + time.Second - 1) / time.Second * time.Second
}

func (s *roundingStore) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	s.plain.Add(1)
	return s.memStore.Acquire(ctx, name, owner, roundUp(ttl))
}

func (s *roundingStore) AcquireGrant(ctx context.Context, name, owner string, ttl time.Duration) (lease.Grant, bool, error) {
	n := s.grants.Add(1)
	f, ok, err := s.memStore.Acquire(ctx, name, owner, roundUp(ttl))
	return lease.Grant{Fence: f, TTL: roundUp(ttl), Handle: roundingHandle{n}}, ok, err
}

func (s *roundingStore) RefreshGrant(ctx context.Context, name, owner string, g lease.Grant, ttl time.Duration) (lease.Grant, bool, error) {
	s.refreshes.Add(1)
	if _, ok := g.Handle.(roundingHandle); !ok {
		s.badHandle.Add(1)
	}
	ok, err := s.memStore.Refresh(ctx, name, owner, roundUp(ttl))
	return lease.Grant{Fence: g.Fence, TTL: roundUp(ttl), Handle: g.Handle}, ok, err
}

func (s *roundingStore) ReleaseGrant(ctx context.Context, name, owner string, g lease.Grant) (bool, error) {
	s.releases.Add(1)
	if _, ok := g.Handle.(roundingHandle); !ok {
		s.badHandle.Add(1)
	}
	return s.memStore.Release(ctx, name, owner)
}

func (s *roundingStore) WaitFree(ctx context.Context, name string) error {
	s.waits.Add(1)
	for {
		s.mu.Lock()
		_, held := s.held(name)
		s.mu.Unlock()
		if !held {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestManagerUsesGrantStore: a lease asked for 300 ms from a store that
// grants whole seconds has TTL 1 s and a safety deadline on it; its
// refresh and release go through the Grant methods with the handle; the
// plain Acquire is never called.
func TestManagerUsesGrantStore(t *testing.T) {
	s := &roundingStore{memStore: newMem()}
	m := lease.NewManager(s)
	ctx := context.Background()
	sent := time.Now()
	l, err := m.Acquire(ctx, "grant", lease.TTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if l.TTL() != time.Second {
		t.Fatalf("Lease.TTL() = %v, want the granted 1s", l.TTL())
	}
	if left := l.Expiry().Sub(sent); left < 800*time.Millisecond {
		t.Fatalf("safety deadline %v after the send, want it on the granted 1s", left)
	}
	if err := l.Refresh(ctx, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if l.TTL() != 2*time.Second {
		t.Fatalf("after Refresh(1.5s) Lease.TTL() = %v, want the granted 2s", l.TTL())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if s.grants.Load() != 1 || s.refreshes.Load() != 1 || s.releases.Load() != 1 || s.plain.Load() != 0 || s.badHandle.Load() != 0 {
		t.Fatalf("calls: %d AcquireGrant, %d RefreshGrant, %d ReleaseGrant, %d Acquire, %d without the handle; want 1, 1, 1, 0, 0",
			s.grants.Load(), s.refreshes.Load(), s.releases.Load(), s.plain.Load(), s.badHandle.Load())
	}
}

// TestManagerWaitsOnWaiter: a waiting Acquire on a Waiter store blocks in
// WaitFree instead of polling: over 600 ms of waiting with a 10 ms poll
// interval it acquires a handful of times, not ~60, and gets the lease
// soon after the release.
func TestManagerWaitsOnWaiter(t *testing.T) {
	s := &roundingStore{memStore: newMem()}
	m := lease.NewManager(s, lease.PollInterval(10*time.Millisecond))
	ctx := context.Background()
	first, err := m.Acquire(ctx, "wait", lease.TTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(600 * time.Millisecond)
		_ = first.Release(ctx)
	}()
	second, err := m.Acquire(ctx, "wait", lease.TTL(10*time.Second), lease.WaitAtMost(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release(ctx)
	if second.Fence() <= first.Fence() {
		t.Fatalf("fence %d after %d", second.Fence(), first.Fence())
	}
	acquires := s.grants.Load() - 1
	t.Logf("waiting for 600 ms: %d acquires, %d WaitFree calls", acquires, s.waits.Load())
	if acquires > 5 || s.waits.Load() == 0 {
		t.Fatalf("%d acquires and %d WaitFree calls while waiting: the Manager polled instead of waiting on the store", acquires, s.waits.Load())
	}
}

// spinWaiter is a broken Waiter: WaitFree returns at once, always.
type spinWaiter struct {
	*memStore
	acquires atomic.Int64
}

func (s *spinWaiter) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	s.acquires.Add(1)
	return s.memStore.Acquire(ctx, name, owner, ttl)
}

func (s *spinWaiter) WaitFree(context.Context, string) error { return nil }

// TestManagerSurvivesASpinningWaiter: a Waiter that never waits must not
// turn a waiting Acquire into a busy loop on the store: after two wake-ups
// in a row that did not wait, the Manager polls for a round.
func TestManagerSurvivesASpinningWaiter(t *testing.T) {
	s := &spinWaiter{memStore: newMem()}
	m := lease.NewManager(s, lease.PollInterval(20*time.Millisecond))
	ctx := context.Background()
	l, err := m.Acquire(ctx, "spin", lease.TTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	_, err = m.Acquire(ctx, "spin", lease.TTL(10*time.Second), lease.WaitAtMost(300*time.Millisecond))
	if err == nil {
		t.Fatal("acquired a held lease")
	}
	n := s.acquires.Load() - 1
	t.Logf("300 ms of waiting on a spinning Waiter: %d acquires (polling alone: ~15)", n)
	if n > 200 {
		t.Fatalf("%d acquires in 300 ms: the Manager spun on a Waiter that does not wait", n)
	}
}

// unsupportedWaiter is a Waiter only by its type: like the table store
// without Listen, its WaitFree answers errors.ErrUnsupported at once.
type unsupportedWaiter struct {
	*memStore
	asked atomic.Int64
}

func (s *unsupportedWaiter) WaitFree(context.Context, string) error {
	s.asked.Add(1)
	return fmt.Errorf("no watch here: %w", errors.ErrUnsupported)
}

// TestWaitFreeUnsupportedAskedOnce: a Manager whose store's WaitFree
// answers errors.ErrUnsupported polls, and does not ask it again on every
// round (nor on its next Acquire).
func TestWaitFreeUnsupportedAskedOnce(t *testing.T) {
	s := &unsupportedWaiter{memStore: newMem()}
	ctx := context.Background()
	if _, ok, err := s.Acquire(ctx, "busy", "other", time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	m := lease.NewManager(s, lease.PollInterval(5*time.Millisecond))
	for range 2 {
		_, err := m.Acquire(ctx, "busy", lease.WaitAtMost(100*time.Millisecond))
		if !errors.Is(err, lease.ErrNotAcquired) {
			t.Fatalf("Acquire of a held name: %v, want ErrNotAcquired", err)
		}
	}
	if n := s.asked.Load(); n != 1 {
		t.Fatalf("WaitFree asked %d times over two waiting Acquires, want 1", n)
	}
}
