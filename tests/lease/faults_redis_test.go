package lease_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/leasetest"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/tests/internal/faultproxy"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
)

const faultPrefix = "i10:"

// ownRedis starts a Redis of the test's own behind a RESP fault proxy and
// returns it, the proxy, and a client straight to the server (the healthy
// path).
func ownRedis(t *testing.T) (*servers.Server, *faultproxy.Proxy, *redis.Client) {
	t.Helper()
	srv := servers.StartRedis(t)
	p := faultproxy.Start(t, srv.Addr, faultproxy.RESP())
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = direct.Close() })
	return srv, p, direct
}

// TestFaultRedisLostAcquireReply: the proxy drops the reply to one
// acquire, after Redis ran it. go-redis retries the command (read timeout,
// MaxRetries 3). With the old script the retry found the caller's own key
// and answered "held": a ghost, held by an owner nobody has. Now the name
// is, within a bounded time, either held by the caller or free.
func TestFaultRedisLostAcquireReply(t *testing.T) {
	_, p, direct := ownRedis(t)
	ctx := context.Background()
	// A short read timeout keeps each lost reply short; the default 3 s
	// behaves the same, slower.
	client := redis.NewClient(&redis.Options{Addr: p.Addr(), ReadTimeout: 50 * time.Millisecond,
		MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })

	type counts struct{ held, free, ghosts, errs int }
	attack := func(t *testing.T, s lease.Store, runs int) counts {
		var c counts
		m := lease.NewManager(s)
		for i := range runs {
			name := fmt.Sprintf("lost-acquire-%d-%d", time.Now().UnixNano(), i)
			key := redisstore.New(direct, redisstore.Prefix(faultPrefix)).Key(name)
			noErr(t, client.Ping(ctx).Err(), "warm-up") // a pooled connection, so the next command is the acquire
			p.DropReplyTo(1)
			l, err := m.Acquire(ctx, name, lease.TTL(time.Minute))
			// Bounded time: the Manager's own release of an unknown outcome
			// runs on its goroutine; give it a moment.
			var holder string
			for range 30 {
				holder, _ = direct.Get(ctx, key).Result()
				if err == nil || holder == "" {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			switch {
			case err == nil && holder == l.Owner():
				c.held++
				noErr(t, l.Release(ctx))
			case err == nil:
				t.Fatalf("run %d: Acquire returned a lease the store does not give its owner (key holds %q)", i, holder)
			case holder == "":
				c.free++
				if errors.Is(err, lease.ErrNotAcquired) {
					t.Fatalf("run %d: a lost reply reported as ErrNotAcquired on a free name: %v", i, err)
				}
			default:
				c.ghosts++
			}
			if err != nil {
				c.errs++
			}
		}
		return c
	}

	naive := attack(t, naiveRedis{redisstore.New(client, redisstore.Prefix(faultPrefix)), client}, 10)
	t.Logf("baseline, old acquire script: %+v", naive)
	want(t, naive.ghosts > 0, "the baseline made no ghost lease (%+v): the attack cannot fail", naive)

	got := attack(t, redisstore.New(client, redisstore.Prefix(faultPrefix)), 100)
	t.Logf("redisstore, go-redis retries: %+v (dropped replies: %d)", got, p.DroppedReplies())
	want(t, got.ghosts == 0 && got.held+got.free == 100, "%d ghost leases in 100 runs", got.ghosts)

	// Without client retries the Manager sees the error and releases
	// under the owner token.
	noRetry := redis.NewClient(&redis.Options{Addr: p.Addr(), ReadTimeout: 50 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = noRetry.Close() })
	client = noRetry
	got = attack(t, redisstore.New(noRetry, redisstore.Prefix(faultPrefix)), 20)
	t.Logf("redisstore, no client retries (the Manager releases): %+v", got)
	want(t, got.ghosts == 0 && got.free+got.held == 20, "%d ghost leases in 20 runs", got.ghosts)
}

// ka is the TTL and KeepAlive interval of the takeover tests: short, so
// each run takes about half a second.
const (
	kaTTL      = 400 * time.Millisecond
	kaInterval = 130 * time.Millisecond
)

// TestFaultRedisPartition: the holder's Redis is blackholed (no RST, no
// answer) past the TTL, with a DEFAULT go-redis client, which ignores
// context deadlines. A rival on a healthy path takes the lease once Redis
// expires it. fn's context must have ended before the rival's grant.
func TestFaultRedisPartition(t *testing.T) {
	_, p, direct := ownRedis(t)
	rival := redisstore.New(direct, redisstore.Prefix(faultPrefix))
	var clients []*redis.Client
	t.Cleanup(func() {
		p.Heal()
		for _, c := range clients {
			_ = c.Close()
		}
	})
	run := func(t *testing.T, naive bool, runs int, ctxTimeout bool) *summary {
		var sum summary
		for i := range runs {
			// Every default, or with ContextTimeoutEnabled: then the store
			// declares that it honours contexts, and the Manager calls it
			// on the caller's goroutine, go-redis itself ending each call
			// at the bound.
			c := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: ctxTimeout})
			clients = append(clients, c)
			// A connection in the pool before the holder's acquire, whose
			// bound (TTL minus margin, 300 ms) a first dial under -race on
			// a loaded machine can exceed: the fault comes later.
			noErr(t, c.Ping(context.Background()).Err(), "warm-up")
			s := redisstore.New(c, redisstore.Prefix(faultPrefix))
			name := fmt.Sprintf("partition-%v-%d-%d", naive, time.Now().UnixNano(), i)
			holder := func(fn func(context.Context)) error {
				if naive {
					return naiveDo(context.Background(), s, name, kaTTL, kaInterval, fn)
				}
				return lease.NewManager(s).Do(context.Background(), name, func(ctx context.Context) error { fn(ctx); return nil },
					lease.TTL(kaTTL), lease.KeepAlive(kaInterval))
			}
			sum.add(runTakeover(t, name, holder, func() { p.Blackhole(true) }, rival))
			p.Heal()
		}
		return &sum
	}
	base := run(t, true, 3, false)
	t.Logf("baseline, no safety deadline: %v", base)
	want(t, base.overlaps > 0, "the baseline never overlapped (%v): the attack cannot fail", base)
	got := run(t, false, 20, false)
	t.Logf("Manager: %v", got)
	want(t, got.ok() && got.takeovers == 20, "VIOLATED: %v", got)
	inline := run(t, false, 10, true)
	t.Logf("Manager, ContextTimeoutEnabled (no goroutine per call): %v", inline)
	want(t, inline.ok() && inline.takeovers == 10, "VIOLATED with ContextTimeoutEnabled: %v", inline)
}

// TestFaultRedisSlowReplies: once the holder has the lease, every byte
// between it and Redis takes 250 ms each way, longer than the KeepAlive
// interval; a refresh's round trip (500 ms) outlasts the TTL (400 ms), so
// Redis expires the lease between two refreshes it receives.
func TestFaultRedisSlowReplies(t *testing.T) {
	_, p, direct := ownRedis(t)
	rival := redisstore.New(direct, redisstore.Prefix(faultPrefix))
	var clients []*redis.Client
	t.Cleanup(func() {
		p.Heal()
		for _, c := range clients {
			_ = c.Close()
		}
	})
	run := func(t *testing.T, naive bool, runs int) *summary {
		var sum summary
		for i := range runs {
			c := redis.NewClient(&redis.Options{Addr: p.Addr()})
			clients = append(clients, c)
			s := redisstore.New(c, redisstore.Prefix(faultPrefix))
			name := fmt.Sprintf("slow-%v-%d-%d", naive, time.Now().UnixNano(), i)
			holder := func(fn func(context.Context)) error {
				if naive {
					return naiveDo(context.Background(), s, name, kaTTL, kaInterval, fn)
				}
				return lease.NewManager(s).Do(context.Background(), name, func(ctx context.Context) error { fn(ctx); return nil },
					lease.TTL(kaTTL), lease.KeepAlive(kaInterval))
			}
			sum.add(runTakeover(t, name, holder, func() { p.SetDelay(250*time.Millisecond, 250*time.Millisecond) }, rival))
			p.Heal()
		}
		return &sum
	}
	base := run(t, true, 3)
	t.Logf("baseline, no safety deadline: %v", base)
	want(t, base.overlaps > 0, "the baseline never overlapped (%v): the attack cannot fail", base)
	got := run(t, false, 20)
	t.Logf("Manager: %v", got)
	want(t, got.ok(), "VIOLATED: %v", got)
}

// TestFaultRedisBlackholeIsBounded: against a blackholed Redis and a
// default go-redis client (which ignores context deadlines and waits 3 s
// per read, retrying), Do and Acquire return within 2 s of a 1 s bound,
// with an error that is not ErrNotAcquired.
func TestFaultRedisBlackholeIsBounded(t *testing.T) {
	blackholeBounded(t, false)
}

// TestFaultRedisBlackholeContextTimeout: the same blackhole with a client
// made with ContextTimeoutEnabled, whose store declares that it honours
// contexts: the Manager calls it on the caller's goroutine and go-redis
// ends each call at the bound. Every call fails with ErrStoreTimeout,
// never ErrNotAcquired, and fn never runs (the time taken is logged, not
// asserted).
func TestFaultRedisBlackholeContextTimeout(t *testing.T) {
	blackholeBounded(t, true)
}

func blackholeBounded(t *testing.T, ctxTimeout bool) {
	_, p, _ := ownRedis(t)
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: ctxTimeout})
	t.Cleanup(func() { p.Heal(); _ = c.Close() })
	s := redisstore.New(c, redisstore.Prefix(faultPrefix))
	want(t, s.HonoursContext() == ctxTimeout, "HonoursContext() = %v with ContextTimeoutEnabled %v", s.HonoursContext(), ctxTimeout)
	m := lease.NewManager(s)
	noErr(t, m.Do(context.Background(), "warm", func(context.Context) error { return nil }))
	p.Blackhole(true)
	check := func(what string, f func() error) {
		t.Helper()
		start := time.Now()
		err := f()
		el := time.Since(start)
		t.Logf("%s: %v after %v", what, err, el.Round(time.Millisecond))
		want(t, err != nil && !errors.Is(err, lease.ErrNotAcquired), "%s: %v, want a store error that is not ErrNotAcquired", what, err)
		want(t, errors.Is(err, lease.ErrStoreTimeout), "%s: %v, want ErrStoreTimeout", what, err)
		if !ctxTimeout {
			want(t, el < 2*time.Second, "%s returned after %v, want < 2 s", what, el)
		}
	}
	ran := false
	check("Do, 1 s context", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return m.Do(ctx, "blackholed", func(context.Context) error { ran = true; return nil })
	})
	check("Acquire, 1 s context", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := m.Acquire(ctx, "blackholed")
		return err
	})
	check("Do, Background and Wait(1s)", func() error {
		return m.Do(context.Background(), "blackholed", func(context.Context) error { ran = true; return nil }, lease.WaitAtMost(time.Second))
	})
	check("Acquire, Background and Wait(1s)", func() error {
		_, err := m.Acquire(context.Background(), "blackholed", lease.WaitAtMost(time.Second))
		return err
	})
	want(t, !ran, "fn ran without a lease")
}

// TestFaultRedisRestartFences: Redis is killed and restarted EMPTY (no
// persistence) while leases are held. Every fence issued after the
// restart must be greater than every fence issued before it, for each
// name; with the old INCR counter they start again at 1.
func TestFaultRedisRestartFences(t *testing.T) {
	srv, _, direct := ownRedis(t)
	ctx := context.Background()
	names := []string{"restart-a", "restart-b", "restart-c", "restart-d"}
	attack := func(t *testing.T, s lease.Store) (violations, checked int) {
		m := lease.NewManager(s)
		before := map[string]int64{}
		for _, n := range names {
			for i := range 5 {
				l, err := m.Acquire(ctx, n, lease.TTL(time.Minute))
				noErr(t, err)
				before[n] = max(before[n], l.Fence())
				if i < 4 || n == "restart-a" || n == "restart-b" {
					noErr(t, l.Release(ctx))
				} // else: held across the restart
			}
		}
		srv.Kill()
		srv.Restart()
		for _, n := range names {
			for range 3 {
				var l *lease.Lease
				var err error
				for range 50 { // the client reconnects
					if l, err = m.Acquire(ctx, n, lease.TTL(time.Minute)); err == nil {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				noErr(t, err, "acquire after the restart")
				checked++
				if l.Fence() <= before[n] {
					violations++
				}
				noErr(t, l.Release(ctx))
			}
		}
		return violations, checked
	}
	v, n := attack(t, naiveRedis{redisstore.New(direct, redisstore.Prefix(faultPrefix+"naive:")), direct})
	t.Logf("baseline, INCR counter: %d of %d fences after the restart not above those before", v, n)
	want(t, v > 0, "the baseline's fences never went back: the attack cannot fail")
	v, n = attack(t, redisstore.New(direct, redisstore.Prefix(faultPrefix)))
	t.Logf("redisstore: %d of %d fences after the restart not above those before", v, n)
	want(t, v == 0, "VIOLATED: %d of %d fences went back after the restart", v, n)
}

// TestFaultRedisConformance runs the conformance suite on the test's own
// Redis, with its restart check (killed and restarted empty).
func TestFaultRedisConformance(t *testing.T) {
	srv, _, _ := ownRedis(t)
	newStore := func(t *testing.T) lease.Store {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: 5})
		t.Cleanup(func() { _ = c.Close() })
		return redisstore.New(c, redisstore.Prefix(faultPrefix))
	}
	leasetest.Run(t, newStore, leasetest.Prefix(namePrefix), leasetest.Races(5, 8),
		leasetest.Restart(func(*testing.T) { srv.Kill(); srv.Restart() }))
}
