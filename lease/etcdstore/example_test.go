package etcdstore_test

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/etcdstore"
)

// A lease on etcd: TTLs are granted in whole seconds (at least 2 s), and
// Lease.TTL tells the one granted.
func Example() {
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"127.0.0.1:2379", "127.0.0.1:22379", "127.0.0.1:32379"},
		DialTimeout: 2 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	m := lease.NewManager(etcdstore.New(client, etcdstore.Prefix("myapp/lease/")))
	err = m.Do(context.Background(), "order-42", func(ctx context.Context) error {
		l, _ := lease.FromContext(ctx)
		fmt.Println("fence", l.Fence(), "TTL", l.TTL())
		return nil
	}, lease.TTL(1500*time.Millisecond), lease.WaitAtMost(5*time.Second))
	if err != nil {
		fmt.Println(err)
	}
}
