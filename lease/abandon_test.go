package lease_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// landsLate is a memStore whose Acquire gives up at its context's end,
// as a client that honours deadlines does, while its request is still on
// its way: the store grants it land after that, as when the server reads
// a statement late (its backend descheduled) and runs it after the client
// stopped waiting.
type landsLate struct {
	*memStore
	land time.Duration
}

func (s *landsLate) HonoursContext() bool { return true }

func (s *landsLate) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	<-ctx.Done()
	go func() {
		time.Sleep(s.land)
		_, _, _ = s.memStore.Acquire(context.Background(), name, owner, ttl)
	}()
	return 0, false, ctx.Err()
}

// TestAbandonOutlastsALateGrant: an Acquire whose store call timed out is
// abandoned (released under its owner token). When the grant lands after
// that release ("not held"), a single release leaves a ghost lease held by
// nobody until its TTL; the Manager releases again for a while and frees
// it. Grants landing 0-600 ms after the timeout, 3 times each, looked at
// 1.5 s after the Acquire (past the Manager's last release, at 1.26 s).
func TestAbandonOutlastsALateGrant(t *testing.T) {
	const look = 1500 * time.Millisecond
	lands := []time.Duration{0, 150 * time.Millisecond, 600 * time.Millisecond}
	t.Run("unprotected", func(t *testing.T) {
		t.Parallel()
		// The store called with a deadline and released once after the
		// timeout, as a caller that gives up would.
		for _, land := range lands[1:] {
			ctx := context.Background()
			s := &landsLate{memStore: newMem(), land: land}
			start := time.Now()
			cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			_, _, err := s.Acquire(cctx, "n", "owner-1", time.Minute)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatal(err)
			}
			if ok, err := s.Release(ctx, "n", "owner-1"); ok || err != nil {
				t.Fatalf("release before the grant landed: %v %v", ok, err)
			}
			time.Sleep(time.Until(start.Add(look)))
			if !s.isHeld("n") {
				t.Fatalf("land %v: no ghost lease: the attack does not reach", land)
			}
		}
	})
	for _, land := range lands {
		for i := range 3 {
			t.Run(fmt.Sprintf("land=%v/%d", land, i), func(t *testing.T) {
				t.Parallel()
				s := &landsLate{memStore: newMem(), land: land}
				m := lease.NewManager(s, lease.CallTimeout(50*time.Millisecond))
				start := time.Now()
				if _, err := m.Acquire(context.Background(), "n", lease.TTL(time.Minute)); !errors.Is(err, lease.ErrStoreTimeout) {
					t.Fatalf("%v, want ErrStoreTimeout", err)
				}
				time.Sleep(time.Until(start.Add(look)))
				if s.isHeld("n") {
					t.Fatal("the late grant is still held: a ghost lease")
				}
			})
		}
	}
}
