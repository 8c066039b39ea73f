package lease_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// hang blocks until release closes, ignoring every context: a store
// client that ignores deadlines.
func hang(release <-chan struct{}) { <-release }

// TestSafetyDeadlineCancelsFnWhileTheStoreHangs: the store stops
// answering refreshes (they hang, ignoring their context). fn's context
// must end while the store still holds the lease for it, that is before
// anyone else could take it; the old KeepAlive waited for the hanging
// refresh.
func TestSafetyDeadlineCancelsFnWhileTheStoreHangs(t *testing.T) {
	// A run where this process was not scheduled until after the store's
	// own expiry (fn woke more than the 75 ms margin late, on a loaded
	// machine) says nothing about the Manager: it is retried, twice at most.
	for attempt := 1; ; attempt++ {
		starved := safetyDeadlineRun(t)
		if !starved {
			return
		}
		if attempt == 3 {
			t.Fatalf("starved 3 times in a row: fn woke after the store's expiry each time")
		}
		t.Logf("attempt %d starved (fn woke after the store's expiry); again", attempt)
	}
}

func safetyDeadlineRun(t *testing.T) (starved bool) {
	s := newMem()
	stuck := make(chan struct{})
	defer close(stuck)
	s.refreshHook = func(string) (bool, error, bool) { hang(stuck); return false, errStoreDown, true }
	const ttl = 300 * time.Millisecond
	var heldAtCancel, cancelled bool
	var cause error
	var late time.Duration
	err := lease.NewManager(s).Do(context.Background(), "hung", func(ctx context.Context) error {
		l, _ := lease.FromContext(ctx)
		<-ctx.Done()
		cancelled = true
		heldAtCancel = s.isHeld("hung") // by us: nobody else can have it yet
		late = time.Since(l.Expiry())
		cause = context.Cause(ctx)
		return ctx.Err()
	}, lease.TTL(ttl), lease.KeepAlive(50*time.Millisecond))
	if cancelled && !heldAtCancel && late > ttl/4 {
		return true
	}
	if !cancelled || !heldAtCancel {
		t.Fatalf("fn's context ended=%v while the store still held the lease=%v; want both (fn woke %v after the deadline)", cancelled, heldAtCancel, late)
	}
	if !errors.Is(cause, lease.ErrLeaseLost) || !errors.Is(err, lease.ErrLeaseLost) {
		t.Fatalf("cause %v, Do %v: want ErrLeaseLost", cause, err)
	}
	return false
}

// TestKeepAliveRetriesFailedRefreshes: two refreshes fail; KeepAlive
// retries them and keeps the lease, instead of giving up on the first.
func TestKeepAliveRetriesFailedRefreshes(t *testing.T) {
	s := newMem()
	var n atomic.Int64
	s.refreshHook = func(string) (bool, error, bool) {
		if k := n.Add(1); k == 2 || k == 3 {
			return false, errStoreDown, true
		}
		return false, nil, false
	}
	err := lease.NewManager(s).Do(context.Background(), "retried", func(ctx context.Context) error {
		for n.Load() < 6 {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(10 * time.Millisecond):
			}
		}
		return nil
	}, lease.TTL(400*time.Millisecond), lease.KeepAlive(40*time.Millisecond))
	if err != nil {
		t.Fatalf("Do after two failed refreshes: %v, want the lease kept", err)
	}
	t.Logf("%d refreshes, two of them failed and retried", n.Load())
}

// TestLeaseDoneAndExpiry: a handle's Done closes at its safety deadline,
// Expiry tells when, and a refresh moves it.
func TestLeaseDoneAndExpiry(t *testing.T) {
	ctx := context.Background()
	m := lease.NewManager(newMem())
	before := time.Now()
	l, err := m.Acquire(ctx, "done", lease.TTL(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	exp := l.Expiry()
	if !exp.After(before) || exp.After(before.Add(200*time.Millisecond)) {
		t.Fatalf("Expiry %v not within the TTL from the acquire", exp.Sub(before))
	}
	if err := l.Refresh(ctx, 0); err != nil { // 0: the lease's own TTL
		t.Fatal(err)
	}
	if !l.Expiry().After(exp) {
		t.Fatal("Refresh did not move Expiry")
	}
	<-l.Done()
	if !errors.Is(context.Cause(l.Context()), lease.ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", context.Cause(l.Context()))
	}
	if time.Now().Before(l.Expiry()) {
		t.Fatal("Done closed before Expiry")
	}
	if err := l.Refresh(ctx, time.Minute); !errors.Is(err, lease.ErrLeaseLost) {
		t.Fatalf("Refresh after the deadline: %v, want ErrLeaseLost", err)
	}
	if err := l.Release(ctx); !errors.Is(err, lease.ErrLeaseLost) {
		t.Fatalf("Release after the deadline: %v, want ErrLeaseLost", err)
	}

	l, err = m.Acquire(ctx, "released", lease.NoExpiry())
	if err != nil {
		t.Fatal(err)
	}
	if !l.Expiry().IsZero() {
		t.Fatal("a NoExpiry lease has an Expiry")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-l.Done() // Release closes it
}

// lostRelease applies the release and then fails, as a store whose reply
// is lost after it freed the lease.
type lostRelease struct {
	*memStore
	lost        atomic.Int64
	retryAnswer bool
}

func (s *lostRelease) Release(ctx context.Context, name, owner string) (bool, error) {
	ok, err := s.memStore.Release(ctx, name, owner)
	n := s.lost.Add(1)
	if err == nil && n == 1 {
		return false, errStoreDown
	}
	if n == 2 {
		s.retryAnswer = ok // what a plain reading would call a lost lease
	}
	return ok, err
}

// TestLostReleaseReplyIsNotLeaseLost: the first release worked but its
// reply was lost; the retry answers "not held". The store call alone
// cannot tell this from a lost lease; the Manager can, because the first
// attempt was sent before the safety deadline.
func TestLostReleaseReplyIsNotLeaseLost(t *testing.T) {
	ctx := context.Background()
	s := &lostRelease{memStore: newMem()}
	l, err := lease.NewManager(s).Acquire(ctx, "rel", lease.TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release whose first reply was lost: %v, want nil", err)
	}
	if s.isHeld("rel") {
		t.Fatal("still held")
	}
	if n := s.lost.Load(); n < 2 || s.retryAnswer {
		t.Fatalf("%d release calls, the retry answered held=%v: want a retry answering not held", n, s.retryAnswer)
	}
}

// TestReleaseCalledAgainAfterALostReply: the first Release's only attempt
// freed the lease but its reply never came (the call ran out of its
// CallTimeout); the caller calls Release again, as its doc invites, and the
// store answers "not held". That is the first attempt's doing, sent in
// time: nil, not ErrLeaseLost.
func TestReleaseCalledAgainAfterALostReply(t *testing.T) {
	ctx := context.Background()
	s := newMem()
	var calls atomic.Int64
	stuck := make(chan struct{})
	defer close(stuck)
	s.releaseHook = func(string) error {
		if calls.Add(1) == 1 {
			hang(stuck) // applied below only after the caller gave up
		}
		return nil
	}
	m := lease.NewManager(s, lease.CallTimeout(30*time.Millisecond))
	l, err := m.Acquire(ctx, "again", lease.TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, lease.ErrStoreTimeout) {
		t.Fatalf("first Release against a hanging store: %v, want ErrStoreTimeout", err)
	}
	// What the hanging attempt did once it reached the store.
	if _, err := s.Release(ctx, "again", l.Owner()); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release called again after a lost reply: %v, want nil", err)
	}
}

// TestHangingStoreIsBounded: a store whose Acquire hangs ignoring its
// context; Do returns at the context's deadline with ErrStoreTimeout, not
// ErrNotAcquired, and the Manager releases under the owner token once the
// call returns.
func TestHangingStoreIsBounded(t *testing.T) {
	s := newMem()
	stuck := make(chan struct{})
	s.acquireHook = func(string) error { hang(stuck); return nil }
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := lease.NewManager(s).Do(ctx, "hung", func(context.Context) error { return errors.New("fn ran") })
	if !errors.Is(err, lease.ErrStoreTimeout) || errors.Is(err, lease.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do on a hanging store: %v, want ErrStoreTimeout wrapping DeadlineExceeded", err)
	}
	close(stuck) // the call returns and takes the lease, too late
	waitUntil(t, func() bool { return !s.isHeld("hung") })
}

// TestDoGivesFnItsLease: fn reads its Lease from its context.
func TestDoGivesFnItsLease(t *testing.T) {
	err := lease.NewManager(newMem()).Do(context.Background(), "mine", func(ctx context.Context) error {
		l, ok := lease.FromContext(ctx)
		if !ok || l.Name() != "mine" || l.Fence() != 1 || l.Expiry().IsZero() {
			return errors.New("no lease in fn's context")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lease.FromContext(context.Background()); ok {
		t.Fatal("a lease in a plain context")
	}
}

// TestDefaultTTL: without TTL a lease expires after DefaultTTL, so a
// crashed holder does not block the name forever; TTL 0 must be said as
// NoExpiry.
func TestDefaultTTL(t *testing.T) {
	ctx := context.Background()
	s := &ttlSpy{memStore: newMem()}
	m := lease.NewManager(s)
	l, err := m.Acquire(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	if s.last != lease.DefaultTTL {
		t.Fatalf("Acquire without TTL sent TTL %v, want %v", s.last, lease.DefaultTTL)
	}
	_ = l.Release(ctx)
	if _, err := m.Acquire(ctx, "zero", lease.TTL(0)); err == nil {
		t.Fatal("TTL(0) accepted; no expiry must be lease.NoExpiry()")
	}
	if _, err := m.Acquire(ctx, "forever", lease.NoExpiry()); err != nil || s.last != 0 {
		t.Fatalf("NoExpiry: err %v, TTL sent %v", err, s.last)
	}
}

type ttlSpy struct {
	*memStore
	last time.Duration
}

func (s *ttlSpy) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	s.last = ttl
	return s.memStore.Acquire(ctx, name, owner, ttl)
}

// TestWaitEndsDuringAHangingPoll: the store answers "held", then hangs.
// Wait still bounds the call, and the answer is the last one the store
// gave: ErrNotAcquired.
func TestWaitEndsDuringAHangingPoll(t *testing.T) {
	s := newMem()
	m := lease.NewManager(s, lease.PollInterval(10*time.Millisecond))
	if _, err := m.Acquire(context.Background(), "busy"); err != nil {
		t.Fatal(err)
	}
	stuck := make(chan struct{})
	defer close(stuck)
	var n atomic.Int64
	s.acquireHook = func(string) error {
		if n.Add(1) > 1 {
			hang(stuck)
		}
		return nil
	}
	_, err := m.Acquire(context.Background(), "busy", lease.WaitAtMost(200*time.Millisecond))
	var na *lease.NotAcquiredError
	if !errors.As(err, &na) || na.Waited < 200*time.Millisecond {
		t.Fatalf("got %v, want ErrNotAcquired after the 200 ms wait", err)
	}
}
