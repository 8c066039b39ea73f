package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/tests/internal/faultproxy"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
)

// twoReplicaSet is a primary with two replicas and three sentinels: the
// preferred replica (replica-priority 10, Sentinel promotes it first)
// replicates through a fault proxy, so that the test can make it lag; the
// other (priority 100) replicates directly.
type twoReplicaSet struct {
	sentinelSet
	other *servers.Server
}

func startTwoReplicaSet(t *testing.T) *twoReplicaSet {
	t.Helper()
	p := servers.StartRedisPrimary(t)
	link := faultproxy.Start(t, p.Addr)
	preferred := servers.StartRedisReplica(t, link.Addr())
	other := servers.StartRedisReplica(t, p.Addr)
	_, err := servers.RedisDo(preferred.Addr, "CONFIG", "SET", "replica-priority", "10")
	noErr(t, err, "preferring the lagging replica")
	_, err = servers.RedisDo(other.Addr, "CONFIG", "SET", "replica-priority", "100")
	noErr(t, err)
	ss := servers.StartSentinels(t, p.Addr, 3, 2)
	return &twoReplicaSet{sentinelSet: sentinelSet{primary: p, replica: preferred, link: link, sentinels: ss}, other: other}
}

// preferredFailover: with two replicas, a holder takes "steady" with
// replication flowing, then the preferred replica's link is blackholed
// (it lags) and the holder takes "lagged"; the other replica keeps up, so
// WaitReplicas(1) is satisfied by it. The primary is killed with SIGKILL,
// Sentinel promotes the preferred (lagging) replica, and a rival tries
// both names within the holder's 30 s TTL: a rival that gets one is a
// lost lease. promotedPreferred tells which replica Sentinel chose.
func preferredFailover(t *testing.T, opts ...redisstore.Option) (run failoverRun, promotedPreferred bool) {
	return preferredFailoverCut(t, false, opts...)
}

// preferredFailoverCut is preferredFailover; with disconnect, the
// preferred replica's link is not only blackholed but dropped (reset,
// its reconnection stalled in the blackhole), so that the primary no
// longer counts it as connected when "lagged" is taken.
func preferredFailoverCut(t *testing.T, disconnect bool, opts ...redisstore.Option) (run failoverRun, promotedPreferred bool) {
	set := startTwoReplicaSet(t)
	ctx := context.Background()
	// WaitReplicas(1) without the opt-in refuses before writing: two
	// replicas are connected, one may be promoted without the write.
	strict := lease.NewManager(redisstore.New(set.client(t), redisstore.Prefix(redisPrefix), redisstore.WaitReplicas(1, 300*time.Millisecond)))
	_, err := strict.Acquire(ctx, uniqueName(t)+"-strict", lease.TTL(30*time.Second))
	want(t, errors.Is(err, redisstore.ErrNotReplicated) && strings.Contains(fmt.Sprint(err), "WaitAllReplicas"),
		"WaitReplicas(1) with 2 connected replicas: want ErrNotReplicated naming WaitAllReplicas, got %v", err)

	opts = append([]redisstore.Option{redisstore.Prefix(redisPrefix)}, opts...)
	holder := lease.NewManager(redisstore.New(set.client(t), opts...))
	held := map[string]*lease.Lease{}
	take := func(name string) {
		l, err := holder.Acquire(ctx, name, lease.TTL(30*time.Second))
		switch {
		case err == nil:
			run.handedOut++
			held[name] = l
		case errors.Is(err, redisstore.ErrNotReplicated):
			run.refused++
		default:
			t.Fatalf("acquiring %s: %v", name, err)
		}
	}
	steady, lagged := uniqueName(t)+"-steady", uniqueName(t)+"-lagged"
	take(steady)
	time.Sleep(100 * time.Millisecond)
	set.link.Blackhole(true)
	if disconnect {
		set.link.Reset()
		noErr(t, waitForAny(10*time.Second, func() error {
			info, err := servers.RedisDo(set.primary.Addr, "INFO", "replication")
			if err == nil && !strings.Contains(info, "connected_slaves:1") {
				err = errors.New("the primary still counts both replicas")
			}
			return err
		}), "dropping the preferred replica's link")
	}
	take(lagged)
	set.primary.Kill()
	promoted := ""
	err = waitForAny(20*time.Second, func() error {
		for _, r := range []*servers.Server{set.replica, set.other} {
			if servers.WaitPromoted(set.sentinels[0].Addr, r.Addr, 0) == nil {
				promoted = r.Addr
				return nil
			}
		}
		return errors.New("no replica promoted yet")
	})
	noErr(t, err, "failover")
	promotedPreferred = promoted == set.replica.Addr
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
		if err == nil && h != nil {
			if time.Now().Before(h.Expiry()) {
				run.lost++
			}
			if l.Fence() <= h.Fence() {
				run.fenceRegressions++
			}
		}
	}
	return run, promotedPreferred
}

// waitForAny retries f every 100 ms until it returns nil or d passes.
func waitForAny(d time.Duration, f func() error) error {
	end := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(end) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSentinelPreferredReplicaLags: Sentinel with two replicas, the one
// it prefers (lower replica-priority) lagging behind the fault proxy, the
// primary SIGKILLed, 5 failovers each. The baseline, WaitReplicas(1) with
// AllowUnackedReplicas, hands out the lagged lease (the other replica
// acknowledged it) and loses it when the lagging replica is promoted;
// WaitAllReplicas(2) refuses that acquire and loses none. Plain
// WaitReplicas(1) refuses to write at all with two replicas connected.
func TestSentinelPreferredReplicaLags(t *testing.T) {
	t.Parallel() // its own servers; mostly waiting for failovers
	const runs = 5
	var mu sync.Mutex
	var partial, all failoverRun
	var partialPreferred, allPreferred int
	add := func(dst *failoverRun, n *int, r failoverRun, pref bool) {
		mu.Lock()
		defer mu.Unlock()
		dst.handedOut += r.handedOut
		dst.lost += r.lost
		dst.refused += r.refused
		dst.fenceRegressions += r.fenceRegressions
		if pref {
			*n++
		}
	}
	t.Run("failovers", func(t *testing.T) {
		for i := range 2 * runs {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				if i%2 == 0 {
					r, pref := preferredFailover(t, redisstore.WaitReplicas(1, 300*time.Millisecond), redisstore.AllowUnackedReplicas())
					add(&partial, &partialPreferred, r, pref)
					return
				}
				r, pref := preferredFailover(t, redisstore.WaitAllReplicas(2, 300*time.Millisecond))
				add(&all, &allPreferred, r, pref)
			})
		}
	})
	t.Logf("WaitReplicas(1)+AllowUnackedReplicas, %d failovers (%d promoted the preferred, lagging replica): %d leases handed out, %d refused, %d lost, %d fence regressions",
		runs, partialPreferred, partial.handedOut, partial.refused, partial.lost, partial.fenceRegressions)
	t.Logf("WaitAllReplicas(2), %d failovers (%d promoted the preferred, lagging replica): %d leases handed out, %d refused, %d lost, %d fence regressions",
		runs, allPreferred, all.handedOut, all.refused, all.lost, all.fenceRegressions)
	if partial.lost == 0 {
		t.Errorf("the baseline lost no lease: the attack did not bite")
	}
	if all.lost != 0 || all.refused != runs || all.handedOut != runs {
		t.Errorf("WaitAllReplicas: %d leases lost, %d of %d lagged acquires refused, %d steady handed out; want 0, all, all", all.lost, all.refused, runs, all.handedOut)
	}
	if partial.fenceRegressions+all.fenceRegressions != 0 {
		t.Errorf("fence regressions across failovers: %d baseline, %d WaitAllReplicas", partial.fenceRegressions, all.fenceRegressions)
	}
}

// TestSentinelDisconnectedReplica: as TestSentinelPreferredReplicaLags,
// but the preferred replica's link is down when the lease is taken (the
// primary counts one connected replica), 2 failovers per arm. Sentinel
// still promotes it (its link went down moments before). WaitAllReplicas
// with atLeast 1 waits for the one connected replica and loses the lease;
// with atLeast 2, the deployment's replica count, the acquire is refused
// and none is lost: why its doc says to set atLeast to the full count.
func TestSentinelDisconnectedReplica(t *testing.T) {
	t.Parallel() // its own servers; mostly waiting for failovers
	const runs = 2
	var mu sync.Mutex
	var one, two failoverRun
	var onePref, twoPref int
	t.Run("failovers", func(t *testing.T) {
		for i := range 2 * runs {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				dst, n, atLeast := &one, &onePref, 1
				if i%2 == 1 {
					dst, n, atLeast = &two, &twoPref, 2
				}
				r, pref := preferredFailoverCut(t, true, redisstore.WaitAllReplicas(atLeast, 300*time.Millisecond))
				mu.Lock()
				defer mu.Unlock()
				dst.handedOut += r.handedOut
				dst.lost += r.lost
				dst.refused += r.refused
				dst.fenceRegressions += r.fenceRegressions
				if pref {
					*n++
				}
			})
		}
	})
	t.Logf("WaitAllReplicas(1), preferred replica disconnected, %d failovers (%d promoted it): %d handed out, %d refused, %d lost",
		runs, onePref, one.handedOut, one.refused, one.lost)
	t.Logf("WaitAllReplicas(2), preferred replica disconnected, %d failovers (%d promoted it): %d handed out, %d refused, %d lost",
		runs, twoPref, two.handedOut, two.refused, two.lost)
	if one.lost == 0 {
		t.Errorf("WaitAllReplicas(1) lost no lease with the promoted replica disconnected: the attack did not bite")
	}
	if two.lost != 0 || two.refused != runs {
		t.Errorf("WaitAllReplicas(2): %d lost, %d of %d lagged acquires refused; want 0 and all", two.lost, two.refused, runs)
	}
}
