package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/leasetest"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/tests/internal/faultproxy"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
)

// sentinelSet is a primary, one replica that replicates through a fault
// proxy (so that the test can make it lag), and three sentinels.
type sentinelSet struct {
	primary, replica *servers.Server
	link             *faultproxy.Proxy // replica -> primary
	sentinels        []*servers.Server
}

func startSentinelSet(t *testing.T) *sentinelSet {
	t.Helper()
	p := servers.StartRedisPrimary(t)
	link := faultproxy.Start(t, p.Addr)
	r := servers.StartRedisReplica(t, link.Addr())
	ss := servers.StartSentinels(t, p.Addr, 3, 1)
	return &sentinelSet{primary: p, replica: r, link: link, sentinels: ss}
}

func (s *sentinelSet) client(t *testing.T) *redis.Client {
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    servers.SentinelMaster,
		SentinelAddrs: servers.SentinelAddrs(s.sentinels),
		DialTimeout:   time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestSentinelConformance: the conformance suite through Sentinel, with
// and without WaitReplicas and WaitAllReplicas.
func TestSentinelConformance(t *testing.T) {
	t.Parallel() // its own servers; mostly waiting for failovers
	set := startSentinelSet(t)
	for _, tc := range []struct {
		name string
		opts []redisstore.Option
	}{
		{"async", nil},
		{"WaitReplicas", []redisstore.Option{redisstore.WaitReplicas(1, time.Second)}},
		{"WaitAllReplicas", []redisstore.Option{redisstore.WaitAllReplicas(1, time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leasetest.Run(t, func(t *testing.T) lease.Store {
				return redisstore.New(set.client(t), append([]redisstore.Option{redisstore.Prefix(redisPrefix)}, tc.opts...)...)
			}, leasetest.Prefix(namePrefix), leasetest.Races(10, 8))
		})
	}
}

// failoverRun is what one Sentinel failover did to the leases taken
// before it.
type failoverRun struct {
	handedOut, lost, refused, fenceRegressions int
}

// sentinelFailover: a holder takes "steady" with replication flowing,
// then the replica's link is blackholed (the replica lags: it gets
// nothing new, as after a resync or a slow link) and the holder takes
// "lagged"; the primary is killed with SIGKILL, Sentinel promotes the
// replica, and a rival on a new client tries both names while the
// holder's leases (TTL 30 s) are still within their safety deadlines. A
// rival that gets one is a lost lease: two holders at once. Every fence
// the rival gets must be above the holder's.
func sentinelFailover(t *testing.T, opts ...redisstore.Option) failoverRun {
	set := startSentinelSet(t)
	ctx := context.Background()
	opts = append([]redisstore.Option{redisstore.Prefix(redisPrefix)}, opts...)
	holder := lease.NewManager(redisstore.New(set.client(t), opts...))
	var run failoverRun
	held := map[string]*lease.Lease{}
	take := func(name string) {
		l, err := holder.Acquire(ctx, name, lease.TTL(30*time.Second))
		switch {
		case err == nil:
			run.handedOut++
			held[name] = l
		case errors.Is(err, redisstore.ErrNotReplicated):
			run.refused++ // not acknowledged: not a lease
		default:
			t.Fatalf("acquiring %s: %v", name, err)
		}
	}
	steady, lagged := uniqueName(t)+"-steady", uniqueName(t)+"-lagged"
	take(steady)
	time.Sleep(100 * time.Millisecond) // asynchronous replication catches up
	set.link.Blackhole(true)
	take(lagged)
	set.primary.Kill()
	if err := servers.WaitPromoted(set.sentinels[0].Addr, set.replica.Addr, 20*time.Second); err != nil {
		t.Fatalf("failover: %v", err)
	}
	// The rival only probes who holds what: without WaitReplicas, which the
	// promoted replica, left without a replica of its own, cannot satisfy.
	rival := lease.NewManager(redisstore.New(set.client(t), redisstore.Prefix(redisPrefix)))
	for _, name := range []string{steady, lagged} {
		var l *lease.Lease
		var err error
		for range 50 { // the new client may first reach the old address
			l, err = rival.Acquire(ctx, name, lease.TTL(30*time.Second))
			if err == nil || errors.Is(err, lease.ErrNotAcquired) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil && !errors.Is(err, lease.ErrNotAcquired) {
			t.Fatalf("rival acquiring %s after the failover: %v", name, err)
		}
		h := held[name]
		if err == nil {
			if h != nil && time.Now().Before(h.Expiry()) {
				run.lost++
			}
			if h != nil && l.Fence() <= h.Fence() {
				run.fenceRegressions++
				t.Logf("%s: rival fence %d, holder's %d", name, l.Fence(), h.Fence())
			}
		}
	}
	return run
}

// TestSentinelFailoverLosesLeases shows the unprotected store first: with
// asynchronous replication the lease taken while the replica lagged is
// lost in the failover (the rival gets it while the holder still holds
// it); then WaitReplicas(1): that acquire is refused (not acknowledged),
// every lease handed out survives, none lost. Fences rise in every case.
func TestSentinelFailoverLosesLeases(t *testing.T) {
	t.Parallel() // its own servers; mostly waiting for failovers
	const runs = 2
	var mu sync.Mutex
	var async, durable failoverRun
	// Each failover has its own servers; they run side by side, as most of
	// a failover is waiting for Sentinel.
	t.Run("failovers", func(t *testing.T) {
		for i := range 2 * runs {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				if i < runs {
					r := sentinelFailover(t)
					mu.Lock()
					async.handedOut += r.handedOut
					async.lost += r.lost
					async.fenceRegressions += r.fenceRegressions
					mu.Unlock()
					return
				}
				r := sentinelFailover(t, redisstore.WaitReplicas(1, 300*time.Millisecond))
				mu.Lock()
				durable.handedOut += r.handedOut
				durable.lost += r.lost
				durable.refused += r.refused
				durable.fenceRegressions += r.fenceRegressions
				mu.Unlock()
			})
		}
	})
	t.Logf("async, %d failovers: %d leases handed out, %d lost, %d fence regressions", runs, async.handedOut, async.lost, async.fenceRegressions)
	t.Logf("WaitReplicas(1), %d failovers: %d leases handed out, %d acquires refused as not replicated, %d lost, %d fence regressions",
		runs, durable.handedOut, durable.refused, durable.lost, durable.fenceRegressions)
	if async.lost == 0 {
		t.Errorf("the unprotected store lost no lease taken while the replica lagged: the attack did not bite")
	}
	if durable.lost != 0 || durable.refused != runs {
		t.Errorf("WaitReplicas: %d leases lost, %d of %d lagged acquires refused; want 0 and all", durable.lost, durable.refused, runs)
	}
	if async.fenceRegressions+durable.fenceRegressions != 0 {
		t.Errorf("fence regressions across failovers: %d async, %d WaitReplicas", async.fenceRegressions, durable.fenceRegressions)
	}
}
