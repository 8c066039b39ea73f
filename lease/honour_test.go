package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// honouring is a memStore that declares that its calls end with their
// context (lease.ContextHonourer). With block set its Acquire waits for
// the context, as a client that honours deadlines does; with late set it
// ignores the context instead, answers after late and grants the lease:
// a store that breaks its promise.
type honouring struct {
	*memStore
	block bool
	late  time.Duration
}

func (h *honouring) HonoursContext() bool { return true }

func (h *honouring) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	switch {
	case h.block:
		<-ctx.Done()
		return 0, false, ctx.Err()
	case h.late > 0:
		time.Sleep(h.late)
		return h.memStore.Acquire(context.Background(), name, owner, ttl)
	}
	return h.memStore.Acquire(ctx, name, owner, ttl)
}

// TestHonouringStoreIsBoundedByItsContext: on a store that declares it
// honours contexts the Manager calls it on the caller's goroutine, and
// the bound reaches the store as its context's deadline: the caller's
// deadline, and CallTimeout when the caller has none. Every attempt
// returns ErrStoreTimeout, never ErrNotAcquired or a Lease.
func TestHonouringStoreIsBoundedByItsContext(t *testing.T) {
	s := &honouring{memStore: newMem(), block: true}
	m := lease.NewManager(s, lease.CallTimeout(80*time.Millisecond))
	bounded := 0
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := m.Acquire(ctx, "hon")
		cancel()
		if errors.Is(err, lease.ErrStoreTimeout) && errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, lease.ErrNotAcquired) {
			bounded++
		} else {
			t.Errorf("attempt %d with a deadline: %v, want ErrStoreTimeout wrapping DeadlineExceeded", i, err)
		}
		_, err = m.Acquire(context.Background(), "hon")
		if errors.Is(err, lease.ErrStoreTimeout) && !errors.Is(err, lease.ErrNotAcquired) {
			bounded++
		} else {
			t.Errorf("attempt %d under CallTimeout: %v, want ErrStoreTimeout", i, err)
		}
	}
	if bounded != 10 {
		t.Fatalf("%d of 10 calls bounded", bounded)
	}
	if s.isHeld("hon") {
		t.Fatal("a refused store left the name held")
	}
}

// TestHonouringStoreLateAnswerIsDropped: a store declares that it
// honours contexts but ignores them, answering (with a grant) after the
// bound. The Manager, which then has no goroutine to stop waiting for,
// cannot return at the bound, but it must not hand out a lease whose
// answer came after it: the caller gets ErrStoreTimeout, and the late
// grant is released under its owner token, every time.
func TestHonouringStoreLateAnswerIsDropped(t *testing.T) {
	s := &honouring{memStore: newMem(), late: 120 * time.Millisecond}
	m := lease.NewManager(s)
	dropped := 0
	for i := 0; i < 4; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
		l, err := m.Acquire(ctx, "late")
		cancel()
		if l == nil && errors.Is(err, lease.ErrStoreTimeout) {
			dropped++
		} else {
			t.Errorf("attempt %d: lease %v, error %v; want no lease and ErrStoreTimeout", i, l, err)
		}
		waitUntil(t, func() bool { return !s.isHeld("late") })
	}
	if dropped != 4 {
		t.Fatalf("%d of 4 late answers dropped", dropped)
	}
	// The same store answering in time grants as usual.
	s.late = 0
	l, err := m.Acquire(context.Background(), "late", lease.TTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(context.Background()); err != nil || s.isHeld("late") {
		t.Fatalf("release: %v, held %v", err, s.isHeld("late"))
	}
}

// TestUnwatchedLeaseStillExpires: a lease whose Done nobody has asked
// for has no timer; its safety deadline is checked when it is used. Past
// it, Refresh and Release report ErrLeaseLost, and a Done asked for only
// then is already closed, with that cause.
func TestUnwatchedLeaseStillExpires(t *testing.T) {
	for _, s := range []lease.Store{newMem(), &honouring{memStore: newMem()}} {
		m := lease.NewManager(s)
		ctx := context.Background()
		l, err := m.Acquire(ctx, "unwatched", lease.TTL(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(l.Expiry()) + 10*time.Millisecond)
		if err := l.Refresh(ctx, 0); !errors.Is(err, lease.ErrLeaseLost) {
			t.Fatalf("%T: Refresh past the safety deadline: %v, want ErrLeaseLost", s, err)
		}
		select {
		case <-l.Done():
		default:
			t.Fatalf("%T: Done open past the safety deadline", s)
		}
		if !errors.Is(context.Cause(l.Context()), lease.ErrLeaseLost) {
			t.Fatalf("%T: cause %v, want ErrLeaseLost", s, context.Cause(l.Context()))
		}
		if err := l.Release(ctx); !errors.Is(err, lease.ErrLeaseLost) {
			t.Fatalf("%T: Release past the safety deadline: %v, want ErrLeaseLost", s, err)
		}
	}
}
