package lease_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
)

// clusterLaggedFailover: on a cluster of its own, the primary serving the
// name's slot drops its replica's link and refuses its reconnection (the
// replica lags: it gets nothing new), the holder acquires, and the
// primary is killed. After the
// replica's promotion a rival on a fresh ClusterClient tries the name
// while the holder's lease (TTL 30 s) is within its safety deadline.
func clusterLaggedFailover(t *testing.T, opts ...redisstore.Option) failoverRun {
	c := servers.StartRedisCluster(t)
	ctx := context.Background()
	opts = append([]redisstore.Option{redisstore.Prefix(redisPrefix)}, opts...)
	store := redisstore.New(clusterClient(t, c), opts...)
	holder := lease.NewManager(store, lease.CallTimeout(2*time.Second))
	name := uniqueName(t)
	primary, replica, err := c.PrimaryFor(store.Key(name))
	noErr(t, err)
	want(t, replica != nil, "the key's primary %s has no replica", primary.Addr)
	var run failoverRun
	// The replica reconnects at once after a dropped link; an ACL that
	// refuses the replication handshake to the default user (the one the
	// replica uses; ACLs are not replicated) keeps it out.
	_, err = servers.RedisDo(primary.Addr, "ACL", "SETUSER", "default", "-psync", "-sync", "-replconf")
	noErr(t, err, "refusing the replication handshake")
	_, err = servers.RedisDo(primary.Addr, "CLIENT", "KILL", "TYPE", "replica")
	noErr(t, err, "dropping the replica's link")
	l, err := holder.Acquire(ctx, name, lease.TTL(30*time.Second))
	switch {
	case err == nil:
		run.handedOut++
	case errors.Is(err, redisstore.ErrNotReplicated):
		run.refused++
	default:
		t.Fatalf("acquire: %v", err)
	}
	primary.Kill()
	if err := waitRole(replica.Addr, "role:master", 20*time.Second); err != nil {
		t.Fatalf("failover: %v", err)
	}
	rival := lease.NewManager(redisstore.New(clusterClient(t, c), redisstore.Prefix(redisPrefix)), lease.CallTimeout(2*time.Second))
	var rl *lease.Lease
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(100 * time.Millisecond) {
		rl, err = rival.Acquire(ctx, name, lease.TTL(30*time.Second))
		if err == nil || errors.Is(err, lease.ErrNotAcquired) {
			break
		}
	}
	if err != nil && !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("rival after the failover: %v", err)
	}
	if err == nil && l != nil {
		if time.Now().Before(l.Expiry()) {
			run.lost++
		}
		if rl.Fence() <= l.Fence() {
			run.fenceRegressions++
		}
	}
	return run
}

func waitRole(addr, role string, d time.Duration) error {
	end := time.Now().Add(d)
	for {
		info, err := servers.RedisDo(addr, "INFO", "replication")
		if err == nil && strings.Contains(info, role) {
			return nil
		}
		if time.Now().After(end) {
			return errors.New(addr + " did not become " + role)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRedisClusterLaggedFailover: the same attack as on Sentinel, on
// Redis Cluster, unprotected first and then with WaitReplicas(1), each on
// a cluster of its own, side by side: unprotected, the lease is lost (a
// rival gets it while the holder holds it); with WaitReplicas the acquire
// is refused and nothing is lost. Fences rise in every case.
func TestRedisClusterLaggedFailover(t *testing.T) {
	t.Parallel() // its own servers; mostly waiting for failovers
	var mu sync.Mutex
	var async, durable failoverRun
	t.Run("failovers", func(t *testing.T) {
		t.Run("async", func(t *testing.T) {
			t.Parallel()
			r := clusterLaggedFailover(t)
			mu.Lock()
			async = r
			mu.Unlock()
		})
		t.Run("WaitReplicas", func(t *testing.T) {
			t.Parallel()
			r := clusterLaggedFailover(t, redisstore.WaitReplicas(1, 300*time.Millisecond))
			mu.Lock()
			durable = r
			mu.Unlock()
		})
	})
	t.Logf("cluster, replica lagging, async: %d lease handed out, %d lost, %d fence regressions", async.handedOut, async.lost, async.fenceRegressions)
	t.Logf("cluster, replica lagging, WaitReplicas(1): %d handed out, %d refused as not replicated, %d lost, %d fence regressions",
		durable.handedOut, durable.refused, durable.lost, durable.fenceRegressions)
	if async.lost == 0 {
		t.Errorf("the unprotected store lost no lease taken while the replica lagged: the attack did not bite")
	}
	if durable.lost != 0 || durable.refused != 1 {
		t.Errorf("WaitReplicas: %d leases lost, %d of 1 lagged acquires refused; want 0 and 1", durable.lost, durable.refused)
	}
	if async.fenceRegressions+durable.fenceRegressions != 0 {
		t.Errorf("fence regressions across failovers: %d async, %d WaitReplicas", async.fenceRegressions, durable.fenceRegressions)
	}
}
