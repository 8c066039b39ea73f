package lease_test

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockplugin/lockplugin/lease/etcdstore"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
)

// etcdClient returns a client on every member of c, closed when the test
// ends.
func etcdClient(t testing.TB, c *servers.EtcdCluster) *clientv3.Client {
	t.Helper()
	cl, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialTimeout: 2 * time.Second,
		// A member killed under a test is the point: its reconnect warnings
		// are noise.
		Logger: zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// etcdStore returns an etcd store on c under the test prefix.
func etcdStore(t testing.TB, c *servers.EtcdCluster) *etcdstore.Store {
	return etcdstore.New(etcdClient(t, c), etcdstore.Prefix("lease-test/"+redisPrefix))
}
