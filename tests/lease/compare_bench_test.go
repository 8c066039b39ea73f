package lease_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// BenchmarkCompareStores: one lease taken and released through
// Manager.Acquire + Lease.Release on every store, serially (latency:
// ns/op) and from parallel goroutines on names of their own (throughput:
// ops/s), against bsm/redislock and go-redsync on the same Redis in the
// same run. The etcd cluster and the replicated Redis are the
// benchmark's own processes on loopback; "redis" is the shared server.
func BenchmarkCompareStores(b *testing.B) {
	b.Run("etcd-3-members", func(b *testing.B) {
		c := servers.StartEtcdCluster(b)
		s := etcdStore(b, c)
		benchStore(b, func() lease.Store { return s })
	})
	b.Run("redis", func(b *testing.B) {
		s, _ := redisStore(b)
		benchStore(b, func() lease.Store { return s })
	})
	b.Run("redis-replicated", func(b *testing.B) {
		p := servers.StartRedisPrimary(b)
		servers.StartRedisReplica(b, p.Addr)
		c := redis.NewClient(&redis.Options{Addr: p.Addr})
		b.Cleanup(func() { _ = c.Close() })
		b.Run("async", func(b *testing.B) {
			s := redisstore.New(c, redisstore.Prefix(redisPrefix))
			benchStore(b, func() lease.Store { return s })
		})
		b.Run("WaitReplicas=1", func(b *testing.B) {
			s := redisstore.New(c, redisstore.Prefix(redisPrefix), redisstore.WaitReplicas(1, time.Second))
			benchStore(b, func() lease.Store { return s })
		})
	})
	b.Run("table-postgres", func(b *testing.B) {
		tg := testdb.Open(b, testdb.Postgres, nil)
		s := tableStore(b, tg.DB)
		benchStore(b, func() lease.Store { return s })
	})
	b.Run("local", func(b *testing.B) {
		s, err := lease.NewLocalStore(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		benchStore(b, func() lease.Store { return s })
	})
	b.Run("baseline=redislock", func(b *testing.B) {
		c := testdb.Redis(b)
		locker := redislock.New(c)
		benchLock(b, func(ctx context.Context, key string) (func() error, error) {
			l, err := locker.Obtain(ctx, key, 10*time.Second, nil)
			if err != nil {
				return nil, err
			}
			return func() error { return l.Release(ctx) }, nil
		})
	})
	b.Run("baseline=redsync", func(b *testing.B) {
		c := testdb.Redis(b)
		rs := redsync.New(goredis.NewPool(c))
		benchLock(b, func(ctx context.Context, key string) (func() error, error) {
			mu := rs.NewMutex(key, redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
			if err := mu.LockContext(ctx); err != nil {
				return nil, err
			}
			return func() error { _, err := mu.UnlockContext(ctx); return err }, nil
		})
	})
}

// benchStore runs serial and parallel Acquire+Release on store.
func benchStore(b *testing.B, store func() lease.Store) {
	m := lease.NewManager(store())
	benchLock(b, func(ctx context.Context, name string) (func() error, error) {
		l, err := m.Acquire(ctx, name, lease.TTL(10*time.Second))
		if err != nil {
			return nil, err
		}
		return func() error { return l.Release(ctx) }, nil
	})
}

// benchLock times take+release: "serial" on one name, "parallel" with each
// goroutine on a name of its own, reporting ops/s.
func benchLock(b *testing.B, take func(ctx context.Context, name string) (func() error, error)) {
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		name := benchName(b)
		b.ResetTimer()
		for range b.N {
			release, err := take(ctx, redisPrefix+name)
			if err != nil {
				b.Fatal(err)
			}
			if err := release(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
	b.Run("parallel", func(b *testing.B) {
		base := benchName(b)
		var g atomic.Int64
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			name := fmt.Sprintf("%s%s-%d", redisPrefix, base, g.Add(1))
			for pb.Next() {
				release, err := take(ctx, name)
				if err != nil {
					b.Error(err)
					return
				}
				if err := release(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
}
