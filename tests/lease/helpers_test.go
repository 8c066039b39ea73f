package lease_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// Every table, lock name and key these tests create starts with "lease_"
// (Redis keys with "lease-test:"). Lock names are unique per run, so runs
// of this package that overlap (a benchmark run beside a test run) share
// the table without meeting; Redis keys carry a per-process run id, so
// that each run deletes only its own.
const (
	table      = "lease_lock_leases"
	namePrefix = "lease_"
)

var redisPrefix = func() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "lease-test:" + hex.EncodeToString(b) + ":"
}()

// tableStore returns a table store on db's test table.
func tableStore(t testing.TB, db *gorm.DB) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.New(db, sqlstore.Table(table))
	if d := dialects.Of(db); !d.Supports(dialects.LeaseTable) {
		if !errors.Is(err, dialects.ErrUnsupported) {
			t.Fatalf("sqlstore.New on %s: %v, want ErrUnsupported", d, err)
		}
		t.Skipf("refused on %s, as documented: %v", d, err)
	}
	if err != nil {
		t.Fatalf("sqlstore.New: %v", err)
	}
	return s
}

// redisStore returns a Redis store under the test prefix on a new client,
// and deletes the test keys when the test ends.
func redisStore(t testing.TB) (*redisstore.Store, *redis.Client) {
	t.Helper()
	c := testdb.Redis(t)
	t.Cleanup(func() { cleanRedis(c) })
	return redisstore.New(c, redisstore.Prefix(redisPrefix)), c
}

func cleanRedis(c *redis.Client) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, redisPrefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if len(keys) > 0 {
		c.Del(ctx, keys...)
	}
}

// signalStore wraps a Store and reports, without blocking, each Acquire
// that found the lease held: a waiter is then known to be polling.
type signalStore struct {
	lease.Store
	refused chan struct{}
}

func newSignalStore(s lease.Store) *signalStore {
	return &signalStore{Store: s, refused: make(chan struct{}, 1)}
}

func (s *signalStore) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	fence, ok, err := s.Store.Acquire(ctx, name, owner, ttl)
	if err == nil && !ok {
		select {
		case s.refused <- struct{}{}:
		default:
		}
	}
	return fence, ok, err
}

// failingStore wraps a Store whose Refresh starts failing after the first
// okRefreshes calls, as a store that goes down mid-lease.
type failingStore struct {
	lease.Store
	okRefreshes int64
	refreshes   atomic.Int64
}

var errInjected = errors.New("injected: store unreachable")

func (s *failingStore) Refresh(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if s.refreshes.Add(1) > s.okRefreshes {
		return false, errInjected
	}
	return s.Store.Refresh(ctx, name, owner, ttl)
}

// stores returns every store under test, each over its real backend:
// local, the table store on every reachable database, and Redis.
func stores(t *testing.T, fn func(t *testing.T, s lease.Store)) {
	t.Run("local", func(t *testing.T) {
		s, err := lease.NewLocalStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		fn(t, s)
	})
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		fn(t, tableStore(t, tg.DB))
	})
	t.Run("redis", func(t *testing.T) {
		s, _ := redisStore(t)
		fn(t, s)
	})
}

// ttlStores is stores without the local store, which ignores TTLs.
func ttlStores(t *testing.T, fn func(t *testing.T, s lease.Store)) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		fn(t, tableStore(t, tg.DB))
	})
	t.Run("redis", func(t *testing.T) {
		s, _ := redisStore(t)
		fn(t, s)
	})
}

// uniqueName returns a lock name unique to the test and run.
func uniqueName(t testing.TB) string { return testdb.Unique(t, namePrefix) }

// noErr fails the test at once when err is not nil.
func noErr(t testing.TB, err error, what ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprint(what...), err)
	}
}

// isErr fails the test at once unless errors.Is(err, target).
func isErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want %v", err, target)
	}
}

// want fails the test at once unless cond holds.
func want(t testing.TB, cond bool, format string, args ...any) {
	t.Helper()
	if !cond {
		t.Fatalf(format, args...)
	}
}
