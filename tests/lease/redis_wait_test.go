package lease_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// pollOnly hides a store's optional interfaces (WaitFree among them), so
// that Manager polls it: the baseline.
type pollOnly struct{ lease.Store }

// TestRedisWaiterWakesOnRelease: with a 10 s PollInterval, a waiter with a
// 3 s wait gets a name released after 200 ms, and one whose holder expires
// (TTL 500 ms) gets it too, because WaitFree subscribes to the release
// channel and times the key's TTL. The baseline, the same store without
// WaitFree, polls: its wait (3 s) runs out before its next poll. Outcomes
// are counted over 5 rounds each.
func TestRedisWaiterWakesOnRelease(t *testing.T) {
	s, _ := redisStore(t)
	ctx := context.Background()
	round := func(st lease.Store, release bool, i int) error {
		name := namePrefix + "i25_redis_wait_" + strconv.FormatBool(release) + strconv.Itoa(i) + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
		holder := lease.NewManager(st)
		ttl := 30 * time.Second
		if !release {
			ttl = 500 * time.Millisecond
		}
		h, err := holder.Acquire(ctx, name, lease.TTL(ttl))
		if err != nil {
			return err
		}
		defer func() { _ = h.Release(ctx) }()
		if release {
			time.AfterFunc(200*time.Millisecond, func() { _ = h.Release(ctx) })
		}
		waiter := lease.NewManager(st, lease.PollInterval(10*time.Second))
		l, err := waiter.Acquire(ctx, name, lease.TTL(5*time.Second), lease.WaitAtMost(3*time.Second))
		if err != nil {
			return err
		}
		return l.Release(ctx)
	}
	for _, release := range []bool{true, false} {
		got, baseline := 0, 0
		for i := range 5 {
			if err := round(s, release, i); err == nil {
				got++
			} else {
				t.Logf("WaitFree round %d: %v", i, err)
			}
			if err := round(pollOnly{s}, release, i); err == nil {
				baseline++
			} else if !errors.Is(err, lease.ErrNotAcquired) {
				t.Errorf("baseline round %d: %v", i, err)
			}
		}
		how := "expiry"
		if release {
			how = "release"
		}
		t.Logf("holder's %s: with WaitFree %d of 5 waiters got the name, polling every 10 s %d of 5", how, got, baseline)
		if got != 5 {
			t.Errorf("holder's %s: %d of 5 waiters got the name with WaitFree, want 5", how, got)
		}
		if baseline != 0 {
			t.Errorf("baseline (polling every 10 s, 3 s wait): %d of 5 got the name; the check cannot tell", baseline)
		}
	}
}
