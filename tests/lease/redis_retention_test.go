package lease_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
)

// i26Redis starts the test's own Redis (no persistence) and a store on it.
func i26Redis(t *testing.T) (*servers.Server, *redis.Client, *redisstore.Store) {
	t.Helper()
	srv := servers.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: 5})
	t.Cleanup(func() { _ = c.Close() })
	return srv, c, redisstore.New(c, redisstore.Prefix("i26:"))
}

// TestRedisFenceKeysBounded: 100k distinct names acquired and released
// (16 at a time), every 1000th kept: the keys left are the live leases'
// (a lock key and a fence counter each), and nothing for the released
// names. Fences of a name taken again keep increasing.
func TestRedisFenceKeysBounded(t *testing.T) {
	_, c, s := i26Redis(t)
	ctx := context.Background()
	const names, keepEvery, workers = 100_000, 1000, 16
	var next, live, errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= names {
					return
				}
				name := fmt.Sprint("order-", i)
				if _, ok, err := s.Acquire(ctx, name, "o", time.Minute); !ok || err != nil {
					errs.Add(1)
					continue
				}
				if i%keepEvery == 0 {
					live.Add(1)
					continue
				}
				if ok, err := s.Release(ctx, name, "o"); !ok || err != nil {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	keys, err := c.DBSize(ctx).Result()
	noErr(t, err)
	t.Logf("redis: %d names in %v: %d keys left for %d live leases (2 keys each), %d errors",
		names, time.Since(start).Round(time.Millisecond), keys, live.Load(), errs.Load())
	want(t, errs.Load() == 0, "%d errors", errs.Load())
	want(t, keys <= 2*live.Load()+2, "%d keys for %d live leases", keys, live.Load())

	// A name taken again after its counter went: above its fence before.
	f1, ok, err := s.Acquire(ctx, "order-1", "o", time.Minute)
	noErr(t, err)
	want(t, ok, "order-1 not acquired")
	_, err = s.Release(ctx, "order-1", "o")
	noErr(t, err)
	f2, _, err := s.Acquire(ctx, "order-1", "o", time.Minute)
	noErr(t, err)
	want(t, f2 > f1, "fence %d after %d", f2, f1)
}

// TestRedisFencesAfterCounterGone: the fence counter goes with its lease
// (deleted on Release, expired a second after an unreleased lease, lost
// with a restart of the test's own Redis without persistence), and every
// fence of the name is still above every fence before it. The baseline, a
// plain counter (INCR) deleted on release, hands out 1 again.
func TestRedisFencesAfterCounterGone(t *testing.T) {
	srv, c, s := i26Redis(t)
	ctx := context.Background()

	// Baseline: INCR for a fence, DEL on release.
	naive := redis.NewScript(`local f = redis.call("INCR", KEYS[1]) if ARGV[1] == "release" then redis.call("DEL", KEYS[1]) end return f`)
	b1, err := naive.Run(ctx, c, []string{"i26-naive"}, "release").Int64()
	noErr(t, err)
	b2, err := naive.Run(ctx, c, []string{"i26-naive"}, "release").Int64()
	noErr(t, err)
	t.Logf("baseline (counter deleted on release): fence %d, then %d", b1, b2)
	want(t, b2 <= b1, "the baseline did not go back")

	const name = "i26-fenced"
	var last int64
	regressions, issued := 0, 0
	take := func(ttl time.Duration, release bool) {
		t.Helper()
		f, ok, err := s.Acquire(ctx, name, "o", ttl)
		noErr(t, err)
		want(t, ok, "not acquired")
		issued++
		if f <= last {
			regressions++
			t.Errorf("fence %d after %d", f, last)
		}
		last = f
		if release {
			ok, err := s.Release(ctx, name, "o")
			noErr(t, err)
			want(t, ok, "not released")
		}
	}
	fenceKey := s.Key(name) + ":fence"
	exists := func() int64 { n, err := c.Exists(ctx, s.Key(name), fenceKey).Result(); noErr(t, err); return n }

	// Release deletes both keys; taken again at once, in a tight loop.
	for range 2000 {
		take(time.Minute, true)
	}
	want(t, exists() == 0, "keys left after release")
	// A lease without expiry keeps its counter while it lives.
	take(0, false)
	ttl, err := c.PTTL(ctx, fenceKey).Result()
	noErr(t, err)
	want(t, ttl < 0, "the counter of a lease without expiry expires in %v", ttl)
	_, err = s.Release(ctx, name, "o")
	noErr(t, err)
	// Not released: both keys expire, the counter a second after the lease.
	take(100*time.Millisecond, false)
	noErr(t, i26WaitUntil(5*time.Second, func() bool { return exists() == 0 }))
	take(time.Minute, true)
	// A restart without persistence: everything is gone.
	take(time.Minute, false)
	srv.Kill()
	srv.Restart()
	noErr(t, i26WaitUntil(10*time.Second, func() bool { return c.Ping(ctx).Err() == nil }))
	take(time.Minute, true)
	t.Logf("redis: %d fences across release, expiry and a restart: %d regressions", issued, regressions)
	want(t, regressions == 0, "%d regressions", regressions)
}

func i26WaitUntil(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
