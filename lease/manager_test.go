package lease_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/leasetest"
)

func noop(context.Context) error { return nil }

func TestBadInputFailsBeforeTheStore(t *testing.T) {
	ctx := context.Background()
	s := newMem()
	m := lease.NewManager(s)
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"empty name", m.Do(ctx, "", noop), "empty lock name"},
		{"long name", m.Do(ctx, strings.Repeat("x", lease.MaxNameLength+1), noop), "longer than"},
		{"nil fn", m.Do(ctx, "n", nil), "needs a function"},
		{"negative TTL", m.Do(ctx, "n", noop, lease.TTL(-time.Second)), "TTL must not be negative"},
		{"negative Wait", m.Do(ctx, "n", noop, lease.WaitAtMost(-time.Second)), "WaitAtMost must not be negative"},
		{"negative KeepAlive", m.Do(ctx, "n", noop, lease.KeepAlive(-time.Second)), "KeepAlive interval must not be negative"},
		{"KeepAlive not under TTL", m.Do(ctx, "n", noop, lease.TTL(time.Second), lease.KeepAlive(time.Second)), "shorter than the TTL"},
		{"KeepAlive on Acquire", second(m.Acquire(ctx, "n", lease.TTL(time.Second), lease.KeepAlive(100*time.Millisecond))), "applies to Do"},
		{"nil store", lease.NewManager(nil).Do(ctx, "n", noop), "needs a Store"},
		{"zero poll", lease.NewManager(s, lease.PollInterval(0)).Do(ctx, "n", noop), "PollInterval must be positive"},
		{"negative poll", second(lease.NewManager(s, lease.PollInterval(-time.Millisecond)).Acquire(ctx, "n")), "PollInterval must be positive"},
		{"nil context", m.Do(nilCtx, "n", noop), "nil context"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, c.err, c.want)
		}
	}
	if n := s.calls.Load(); n != 0 {
		t.Fatalf("bad input reached the store %d times", n)
	}
	l, err := m.Acquire(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(ctx, -time.Second); err == nil {
		t.Fatal("Refresh with a negative TTL succeeded")
	}
}

// nilCtx is a nil context, the bad input of one case.
var nilCtx context.Context

func second[T any](_ T, err error) error { return err }

func TestHeldLeaseIsRefusedAtOnceWithTheName(t *testing.T) {
	ctx := context.Background()
	s := newMem()
	m := lease.NewManager(s)
	l, err := m.Acquire(ctx, "order-42")
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	before := s.calls.Load()
	err = m.Do(ctx, "order-42", func(context.Context) error { ran = true; return nil })
	if !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("Do on a held lease: %v, want ErrNotAcquired", err)
	}
	if ran {
		t.Fatal("fn ran without the lease")
	}
	if n := s.calls.Load() - before; n != 1 {
		t.Fatalf("Wait 0 made %d store calls; it must try once and not wait", n)
	}
	var na *lease.NotAcquiredError
	if !errors.As(err, &na) || na.Name != "order-42" || !strings.Contains(err.Error(), `"order-42"`) {
		t.Fatalf("error %q does not name the lock", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Do(ctx, "order-42", func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("Do after release: ran=%v err=%v", ran, err)
	}
}

func TestWaitGetsTheLeaseWhenReleased(t *testing.T) {
	ctx := context.Background()
	s := newMem()
	s.refused = make(chan string, 1)
	m := lease.NewManager(s, lease.PollInterval(5*time.Millisecond))
	holder, err := m.Acquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := m.Acquire(ctx, "job", lease.WaitAtMost(10*time.Second))
		if err == nil && l.Fence() <= holder.Fence() {
			err = errors.New("waiter's fence is not greater than the holder's")
		}
		got <- err
	}()
	<-s.refused // the waiter found it held and is now polling
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
}

func TestWaitGivesUpAfterWaitAndOnContextEnd(t *testing.T) {
	ctx := context.Background()
	s := newMem()
	m := lease.NewManager(s, lease.PollInterval(10*time.Millisecond))
	if _, err := m.Acquire(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	before := s.calls.Load()
	start := time.Now()
	_, err := m.Acquire(ctx, "busy", lease.WaitAtMost(100*time.Millisecond))
	el := time.Since(start)
	if !errors.Is(err, lease.ErrNotAcquired) || !strings.Contains(err.Error(), "after waiting") {
		t.Fatalf("got %v, want ErrNotAcquired after waiting", err)
	}
	if el < 100*time.Millisecond || el > 2*time.Second {
		t.Fatalf("WaitAtMost(100ms) gave up after %v", el)
	}
	if n := s.calls.Load() - before; n < 3 {
		t.Fatalf("only %d attempts in 100 ms with a 10 ms poll", n)
	}

	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = m.Acquire(cctx, "busy", lease.WaitAtMost(time.Hour))
	if !errors.Is(err, lease.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("context end while waiting: %v, want ErrNotAcquired wrapping DeadlineExceeded", err)
	}
}

func TestStoreErrorIsNotNotAcquiredAndFnDoesNotRun(t *testing.T) {
	s := newMem()
	s.acquireHook = func(string) error { return errStoreDown }
	ran := false
	err := lease.NewManager(s).Do(context.Background(), "n", func(context.Context) error { ran = true; return nil }, lease.WaitAtMost(time.Second))
	if !errors.Is(err, errStoreDown) || errors.Is(err, lease.ErrNotAcquired) || ran {
		t.Fatalf("got err=%v ran=%v, want the store error and fn not run", err, ran)
	}
}

// lostReply takes the lease in the memStore underneath and then fails, as
// a store does whose answer is lost to a timeout, a cancellation or a
// broken connection after it took the lease.
type lostReply struct {
	*memStore
	fail func(ctx context.Context) error
}

func (s lostReply) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	if _, _, err := s.memStore.Acquire(ctx, name, owner, ttl); err != nil {
		return 0, false, err
	}
	return 0, false, s.fail(ctx)
}

// A lease the store took although the caller saw an error is released at
// once: nobody else has its owner token, and without a TTL it would stay
// held by nobody forever.
func TestFailedAcquireLeavesNoLease(t *testing.T) {
	s := newMem()
	ran := false
	err := lease.NewManager(lostReply{s, func(context.Context) error { return errStoreDown }}).
		Do(context.Background(), "lost-reply", func(context.Context) error { ran = true; return nil })
	if !errors.Is(err, errStoreDown) || errors.Is(err, lease.ErrNotAcquired) || ran {
		t.Fatalf("got err=%v ran=%v, want the store error and fn not run", err, ran)
	}
	if s.isHeld("lost-reply") {
		t.Fatal("the lease the store took before failing is still held, by an owner nobody knows")
	}

	// A context that ends before the store's first answer is a store
	// error (nobody said the name was held), wrapping the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	_, err = lease.NewManager(lostReply{s, func(ctx context.Context) error { cancel(); return ctx.Err() }}).
		Acquire(ctx, "cancelled-reply", lease.WaitAtMost(time.Minute))
	if errors.Is(err, lease.ErrNotAcquired) || !errors.Is(err, context.Canceled) || !errors.Is(err, lease.ErrStoreTimeout) {
		t.Fatalf("got %v, want ErrStoreTimeout wrapping context.Canceled, not ErrNotAcquired", err)
	}
	if s.isHeld("cancelled-reply") {
		t.Fatal("the lease granted as the context ended is still held")
	}
}

func TestDoReleasesAfterErrorPanicAndCancellation(t *testing.T) {
	ctx := context.Background()
	s := newMem()
	m := lease.NewManager(s)
	boom := errors.New("boom")
	if err := m.Do(ctx, "e", func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Do returned %v, want fn's error", err)
	}
	if s.isHeld("e") {
		t.Fatal("lease still held after fn failed")
	}

	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic swallowed")
			}
		}()
		_ = m.Do(ctx, "p", func(context.Context) error { panic("boom") })
	}()
	if s.isHeld("p") {
		t.Fatal("lease still held after fn panicked")
	}

	cctx, cancel := context.WithCancel(ctx)
	err := m.Do(cctx, "c", func(ctx context.Context) error {
		cancel()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do returned %v", err)
	}
	if s.isHeld("c") {
		t.Fatal("lease still held after the caller's context was cancelled: release must survive it")
	}
}

func TestReleaseErrorIsReported(t *testing.T) {
	s := newMem()
	s.releaseHook = func(string) error { return errStoreDown }
	err := lease.NewManager(s).Do(context.Background(), "r", noop, lease.TTL(time.Minute))
	if !errors.Is(err, errStoreDown) {
		t.Fatalf("Do returned %v, want the release error", err)
	}
}

func TestOwnerTokensAreRandomPerHandle(t *testing.T) {
	ctx := context.Background()
	m := lease.NewManager(newMem())
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for i := range 50 {
		l, err := m.Acquire(ctx, "tok")
		if err != nil {
			t.Fatal(err)
		}
		if !hex32.MatchString(l.Owner()) || seen[l.Owner()] {
			t.Fatalf("owner %q: want 128 fresh random bits in hex", l.Owner())
		}
		seen[l.Owner()] = true
		if l.Name() != "tok" || l.Fence() != int64(i+1) {
			t.Fatalf("Name %q Fence %d", l.Name(), l.Fence())
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("second Release: %v, want a no-op", err)
		}
		if err := l.Refresh(ctx, 0); !errors.Is(err, lease.ErrLeaseLost) {
			t.Fatalf("Refresh after Release: %v, want ErrLeaseLost", err)
		}
	}
}

// waitUntil polls cond every 5 ms for up to 5 s; used only to wait for a
// TTL to pass, which nothing can signal.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLostLease(t *testing.T) {
	ctx := context.Background()
	s := newMem()
	m := lease.NewManager(s)
	first, err := m.Acquire(ctx, "lost", lease.TTL(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var second *lease.Lease
	waitUntil(t, func() bool {
		second, err = m.Acquire(ctx, "lost", lease.TTL(time.Minute))
		return err == nil
	})
	if second.Fence() <= first.Fence() {
		t.Fatalf("takeover fence %d not above %d", second.Fence(), first.Fence())
	}
	if err := first.Refresh(ctx, time.Minute); !errors.Is(err, lease.ErrLeaseLost) || !strings.Contains(err.Error(), `"lost"`) {
		t.Fatalf("Refresh of a lost lease: %v, want ErrLeaseLost naming it", err)
	}
	if err := first.Release(ctx); !errors.Is(err, lease.ErrLeaseLost) {
		t.Fatalf("Release of a lost lease: %v, want ErrLeaseLost", err)
	}
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Do notices at release time that the lease expired under fn.
	err = m.Do(ctx, "lost2", func(context.Context) error {
		waitUntil(t, func() bool { return !s.isHeld("lost2") })
		return nil
	}, lease.TTL(50*time.Millisecond))
	if !errors.Is(err, lease.ErrLeaseLost) {
		t.Fatalf("Do whose lease expired under fn: %v, want ErrLeaseLost", err)
	}
}

func TestKeepAliveKeepsTheLease(t *testing.T) {
	ctx := context.Background()
	s := newMem()
	m := lease.NewManager(s)
	var refreshes atomic.Int64
	s.refreshHook = func(string) (bool, error, bool) { refreshes.Add(1); return false, nil, false }
	err := m.Do(ctx, "kept", func(ctx context.Context) error {
		// Outlive the TTL three times over while others try to take it.
		deadline := time.Now().Add(300 * time.Millisecond)
		for time.Now().Before(deadline) {
			if _, err := m.Acquire(ctx, "kept"); !errors.Is(err, lease.ErrNotAcquired) {
				t.Errorf("another caller's Acquire during KeepAlive: %v", err)
				return nil
			}
			time.Sleep(10 * time.Millisecond)
		}
		return ctx.Err()
	}, lease.TTL(100*time.Millisecond), lease.KeepAlive(30*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if refreshes.Load() < 3 {
		t.Fatalf("%d refreshes in 300 ms at a 30 ms interval", refreshes.Load())
	}
}

func TestKeepAliveFailureCancelsFn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refresh func() (bool, error)
		cause   error
	}{
		{"store fails", func() (bool, error) { return false, errStoreDown }, errStoreDown},
		{"lease gone", func() (bool, error) { return false, nil }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newMem()
			var n atomic.Int64
			s.refreshHook = func(string) (bool, error, bool) {
				if n.Add(1) <= 2 {
					return false, nil, false // the first two refreshes work
				}
				ok, err := tc.refresh()
				return ok, err, true
			}
			cancelled := false
			err := lease.NewManager(s).Do(context.Background(), "ka", func(ctx context.Context) error {
				select {
				case <-ctx.Done():
					cancelled = true
					if !errors.Is(context.Cause(ctx), lease.ErrLeaseLost) {
						t.Errorf("cause %v, want ErrLeaseLost", context.Cause(ctx))
					}
					return ctx.Err()
				case <-time.After(5 * time.Second):
					return errors.New("fn's context was not cancelled")
				}
			}, lease.TTL(time.Second), lease.KeepAlive(20*time.Millisecond))
			if !cancelled {
				t.Fatalf("fn's context was not cancelled: %v", err)
			}
			if !errors.Is(err, lease.ErrLeaseLost) {
				t.Fatalf("Do returned %v, want ErrLeaseLost", err)
			}
			if tc.cause != nil && !errors.Is(err, tc.cause) {
				t.Fatalf("Do returned %v, want it to wrap %v", err, tc.cause)
			}
			// Do frees a lost lease without waiting for the store.
			waitUntil(t, func() bool { return !s.isHeld("ka") })
		})
	}
}

// exclusive runs 8 goroutines × rounds Do calls on one name behind a
// barrier and returns the most goroutines seen inside fn at once and how
// many fn calls ran.
func exclusive(t *testing.T, store lease.Store, rounds int) (maxIn, runs int64) {
	t.Helper()
	m := lease.NewManager(store, lease.PollInterval(2*time.Millisecond))
	var in, most, ran atomic.Int64
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	const workers = 8
	ready.Add(workers)
	done.Add(workers)
	for range workers {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for range rounds {
				err := m.Do(context.Background(), "exclusive", func(context.Context) error {
					n := in.Add(1)
					for {
						old := most.Load()
						if n <= old || most.CompareAndSwap(old, n) {
							break
						}
					}
					time.Sleep(200 * time.Microsecond) // the protected work
					in.Add(-1)
					ran.Add(1)
					return nil
				}, lease.WaitAtMost(30*time.Second))
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return most.Load(), ran.Load()
}

func TestDoIsExclusive(t *testing.T) {
	maxIn, _ := exclusive(t, leasetest.GrantAll(), 5)
	t.Logf("baseline, store that grants everyone: %d inside fn at once", maxIn)
	if maxIn < 2 {
		t.Fatalf("baseline saw at most %d goroutine inside fn: the check cannot fail", maxIn)
	}
	maxIn, runs := exclusive(t, newMem(), 10)
	t.Logf("memory store: max %d inside fn, %d runs", maxIn, runs)
	if maxIn != 1 || runs != 80 {
		t.Fatalf("max %d inside fn at once (want 1), %d of 80 runs", maxIn, runs)
	}
}
