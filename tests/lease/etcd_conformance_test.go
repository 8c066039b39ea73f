package lease_test

import (
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/leasetest"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
)

// TestEtcdConformance runs the whole conformance suite, optional parts
// included (GrantStore, Waiter), on a 3-member etcd cluster of the test's
// own, and restarts the whole cluster for the fences-across-restart check.
// The short TTL is 1 s, which etcd rounds up to its 2 s minimum.
func TestEtcdConformance(t *testing.T) {
	t.Parallel() // its own servers; mostly waiting for failovers
	c := servers.StartEtcdCluster(t)
	leasetest.Run(t, func(t *testing.T) lease.Store { return etcdStore(t, c) },
		leasetest.Prefix(namePrefix), leasetest.ShortTTL(time.Second), leasetest.Races(10, 8),
		leasetest.Restart(func(t *testing.T) { c.RestartAll() }))
}
