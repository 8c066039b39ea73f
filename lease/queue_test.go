package lease_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// fakeQueuer is a memStore whose AcquireQueued does what each test says.
type fakeQueuer struct {
	*memStore
	queued atomic.Int64
	// acquireQ is swapped by the test while an abandoned call of the
	// previous step may still be running: atomic.
	acquireQ atomic.Pointer[acquireQueuedFunc]
}

type acquireQueuedFunc func(ctx context.Context, name, owner string, ttl time.Duration) (lease.Grant, time.Time, bool, error)

func (q *fakeQueuer) setAcquireQ(f acquireQueuedFunc) { q.acquireQ.Store(&f) }

func (q *fakeQueuer) AcquireGrant(ctx context.Context, name, owner string, ttl time.Duration) (lease.Grant, bool, error) {
	f, ok, err := q.memStore.Acquire(ctx, name, owner, ttl)
	return lease.Grant{Fence: f, TTL: ttl}, ok, err
}

func (q *fakeQueuer) RefreshGrant(ctx context.Context, name, owner string, g lease.Grant, ttl time.Duration) (lease.Grant, bool, error) {
	ok, err := q.memStore.Refresh(ctx, name, owner, ttl)
	return lease.Grant{Fence: g.Fence, TTL: ttl}, ok, err
}

func (q *fakeQueuer) ReleaseGrant(ctx context.Context, name, owner string, _ lease.Grant) (bool, error) {
	return q.memStore.Release(ctx, name, owner)
}

func (q *fakeQueuer) AcquireQueued(ctx context.Context, name, owner string, ttl time.Duration) (lease.Grant, time.Time, bool, error) {
	q.queued.Add(1)
	return (*q.acquireQ.Load())(ctx, name, owner, ttl)
}

// TestManagerUsesQueuer: a waiting Acquire with a TTL goes to
// AcquireQueued (and no other Acquire does); a wait that runs out in the
// queue is ErrNotAcquired; a store error is a store error; an answer whose
// TTL started too long ago is refused, and the name freed.
func TestManagerUsesQueuer(t *testing.T) {
	ctx := context.Background()
	q := &fakeQueuer{memStore: newMem()}
	m := lease.NewManager(q)

	q.setAcquireQ(func(ctx context.Context, name, owner string, ttl time.Duration) (lease.Grant, time.Time, bool, error) {
		f, ok, err := q.memStore.Acquire(ctx, name, owner, ttl)
		return lease.Grant{Fence: f, TTL: ttl}, time.Now(), ok, err
	})
	l, err := m.Acquire(ctx, "i25_q", lease.TTL(time.Second), lease.WaitAtMost(time.Second))
	if err != nil || q.queued.Load() != 1 {
		t.Fatalf("waiting Acquire: %v, %d AcquireQueued calls, want the lease through 1", err, q.queued.Load())
	}
	_ = l.Release(ctx)
	if l, err := m.Acquire(ctx, "i25_q", lease.TTL(time.Second)); err != nil || q.queued.Load() != 1 {
		t.Fatalf("Acquire without a wait: %v, %d AcquireQueued calls, want 1 (not queued)", err, q.queued.Load())
	} else {
		_ = l.Release(ctx)
	}
	if l, err := m.Acquire(ctx, "i25_q", lease.NoExpiry(), lease.WaitAtMost(time.Second)); err != nil || q.queued.Load() != 1 {
		t.Fatalf("waiting Acquire without expiry: %v, %d AcquireQueued calls, want 1 (not queued)", err, q.queued.Load())
	} else {
		_ = l.Release(ctx)
	}

	// The wait runs out in the queue.
	q.setAcquireQ(func(ctx context.Context, _, _ string, _ time.Duration) (lease.Grant, time.Time, bool, error) {
		<-ctx.Done()
		return lease.Grant{}, time.Time{}, false, ctx.Err()
	})
	if _, err := m.Acquire(ctx, "i25_q", lease.TTL(time.Second), lease.WaitAtMost(50*time.Millisecond)); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("wait ran out in the queue: %v, want ErrNotAcquired", err)
	}

	// A store error.
	boom := errors.New("boom")
	q.setAcquireQ(func(context.Context, string, string, time.Duration) (lease.Grant, time.Time, bool, error) {
		return lease.Grant{}, time.Time{}, false, boom
	})
	if _, err := m.Acquire(ctx, "i25_q", lease.TTL(time.Second), lease.WaitAtMost(time.Second)); !errors.Is(err, boom) || errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("store error: %v, want it, not ErrNotAcquired", err)
	}

	// Taken, but the TTL ran from a time long gone: refused, name freed.
	q.setAcquireQ(func(ctx context.Context, name, owner string, ttl time.Duration) (lease.Grant, time.Time, bool, error) {
		f, ok, err := q.memStore.Acquire(ctx, name, owner, ttl)
		return lease.Grant{Fence: f, TTL: ttl}, time.Now().Add(-time.Hour), ok, err
	})
	if _, err := m.Acquire(ctx, "i25_q", lease.TTL(time.Second), lease.WaitAtMost(time.Second)); !errors.Is(err, lease.ErrStoreTimeout) {
		t.Fatalf("stale answer: %v, want ErrStoreTimeout", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		if l, err := m.Acquire(ctx, "i25_q", lease.TTL(time.Second)); err == nil {
			_ = l.Release(ctx)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the name taken by the stale answer was not freed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
