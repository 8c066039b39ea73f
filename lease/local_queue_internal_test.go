package lease

import (
	"context"
	"errors"
	"testing"
	"time"
)

// queueLen is how many waiters key's queue has in this process.
func queueLen(key string) int {
	localQueues.mu.Lock()
	defer localQueues.mu.Unlock()
	if q := localQueues.m[key]; q != nil {
		return len(q.waiters)
	}
	return 0
}

// awaitQueued waits until key's queue has n waiters.
func awaitQueued(t *testing.T, key string, n int) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); queueLen(key) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d waiters queued, want %d", queueLen(key), n)
		}
	}
}

// TestLocalQueueFIFO: waiting Acquires of one process on a held name get
// it in the order they came (with a TTL or without expiry alike); a plain
// Acquire does not take it from under them; a waiter whose context ends
// leaves the queue at once; nothing is left in the process's queues.
func TestLocalQueueFIFO(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewLocalStore(dir) // a second store of the process shares the queue
	m, mo := NewManager(s), NewManager(other)
	const name, waiters = "hot", 6
	key := s.path(name)
	first, err := m.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, waiters)
	errs := make(chan error, waiters)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gaveUp := make(chan error, 1)
	for i := range waiters {
		mgr, opt := m, TTL(time.Minute)
		if i%2 == 1 {
			mgr, opt = mo, NoExpiry()
		}
		go func() {
			l, err := mgr.Acquire(ctx, name, opt, WaitAtMost(10*time.Second))
			if err != nil {
				errs <- err
				return
			}
			order <- i
			time.Sleep(time.Millisecond)
			errs <- l.Release(ctx)
		}()
		awaitQueued(t, key, i+1)
		if i == 2 {
			// One more waiter, in the middle, that gives up.
			go func() {
				_, err := m.Acquire(cctx, name, WaitAtMost(10*time.Second))
				gaveUp <- err
			}()
			awaitQueued(t, key, i+2)
			cancel()
			if err := <-gaveUp; !errors.Is(err, ErrNotAcquired) {
				t.Fatalf("cancelled waiter: %v", err)
			}
			awaitQueued(t, key, i+1)
		}
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The name may be free in the file system, but it is the first
	// waiter's: a plain Acquire, here or through the other store, is
	// refused.
	if _, ok, err := s.Acquire(ctx, name, "barger", 0); ok || err != nil {
		t.Fatalf("a plain Acquire took the name from under %d waiters: %v %v", queueLen(key), ok, err)
	}
	if _, ok, err := other.Acquire(ctx, name, "barger", 0); ok || err != nil {
		t.Fatalf("a plain Acquire through another store: %v %v", ok, err)
	}
	for i := range waiters {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if got := <-order; got != i {
			t.Fatalf("grant %d went to waiter %d: not first come, first served", i, got)
		}
	}
	localQueues.mu.Lock()
	left := len(localQueues.m)
	localQueues.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d queues left in the process", left)
	}
}

// TestLocalPoll: a head's poll shrinks with its age, jittered within
// [d/2, 3d/2), never below 0.5 ms.
func TestLocalPoll(t *testing.T) {
	for _, c := range []struct {
		age    time.Duration
		lo, hi time.Duration
	}{
		{0, 25 * time.Millisecond, 75 * time.Millisecond},
		{time.Second, 2 * time.Millisecond, 7 * time.Millisecond},
		{time.Minute, time.Millisecond / 2, 3 * time.Millisecond / 2},
	} {
		for range 100 {
			if d := localPoll(c.age); d < c.lo || d >= c.hi {
				t.Fatalf("localPoll(%v) = %v, want in [%v, %v)", c.age, d, c.lo, c.hi)
			}
		}
	}
}
