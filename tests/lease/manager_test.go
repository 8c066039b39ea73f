package lease_test

import (
	"context"
	"errors"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/leasetest"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestDoExclusive: 8 goroutines Do one name with a wait, 25 rounds each.
// First a store that grants everyone, to show the check catches overlap;
// then every real store, where it must never happen.
func TestDoExclusive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := scenario.Config{Workers: 8, Rounds: 25, Prefix: namePrefix + "exclusive"}

	base, err := scenario.LeaseExclusive(ctx, leasetest.GrantAll(), cfg)
	noErr(t, err)
	t.Logf("baseline (grants everyone): %s", base.Observed)
	want(t, !base.OK && base.Lost > 0, "the unprotected baseline held (%s): the scenario cannot fail", base.Observed)

	stores(t, func(t *testing.T, s lease.Store) {
		res, err := scenario.LeaseExclusive(ctx, s, cfg)
		noErr(t, err)
		t.Logf("%s in %v", res.Observed, res.Elapsed.Round(time.Millisecond))
		want(t, res.OK && res.Ops == 200, "VIOLATED: %s", res.Observed)
	})
}

// TestLostLease: a lease with a 300 ms TTL expires, another holder takes
// it, and the first holder's Refresh and Release say ErrLeaseLost.
func TestLostLease(t *testing.T) {
	ttlStores(t, func(t *testing.T, s lease.Store) {
		ctx := context.Background()
		m := lease.NewManager(s, lease.PollInterval(10*time.Millisecond))
		name := uniqueName(t)
		first, err := m.Acquire(ctx, name, lease.TTL(300*time.Millisecond))
		noErr(t, err)
		start := time.Now()
		// Waiting for the expiry: a waiting Acquire polls the store.
		second, err := m.Acquire(ctx, name, lease.TTL(time.Minute), lease.WaitAtMost(10*time.Second))
		noErr(t, err)
		took := time.Since(start)
		t.Logf("taken over %v after the first acquire; fences %d then %d", took.Round(time.Millisecond), first.Fence(), second.Fence())
		want(t, took > 150*time.Millisecond, "taken over after %v, long before the 300 ms TTL", took)
		want(t, second.Fence() > first.Fence(), "takeover fence %d not above %d", second.Fence(), first.Fence())

		err = first.Refresh(ctx, time.Minute)
		isErr(t, err, lease.ErrLeaseLost)
		want(t, strings.Contains(err.Error(), name), "error %q does not name the lock", err)
		isErr(t, first.Release(ctx), lease.ErrLeaseLost)
		noErr(t, second.Refresh(ctx, time.Minute), "the new holder lost its lease to the old one's Release")
		noErr(t, second.Release(ctx))
	})
}

// TestKeepAlive: KeepAlive keeps a 300 ms lease for a second; when the
// store starts failing, fn's context is cancelled and Do says
// ErrLeaseLost.
func TestKeepAlive(t *testing.T) {
	ttlStores(t, func(t *testing.T, s lease.Store) {
		ctx := context.Background()
		m := lease.NewManager(s)
		name := uniqueName(t)
		err := m.Do(ctx, name, func(ctx context.Context) error {
			deadline := time.Now().Add(time.Second)
			for time.Now().Before(deadline) {
				_, err := m.Acquire(ctx, name)
				if !errors.Is(err, lease.ErrNotAcquired) {
					return errors.New("another caller got in while KeepAlive ran: " + errString(err))
				}
				time.Sleep(50 * time.Millisecond)
			}
			return nil
		}, lease.TTL(300*time.Millisecond), lease.KeepAlive(100*time.Millisecond))
		noErr(t, err)

		failing := &failingStore{Store: s, okRefreshes: 1}
		var cause error
		ran := false
		err = lease.NewManager(failing).Do(ctx, uniqueName(t), func(ctx context.Context) error {
			ran = true
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
				return ctx.Err()
			case <-time.After(10 * time.Second):
				return errors.New("fn's context was not cancelled")
			}
		}, lease.TTL(time.Second), lease.KeepAlive(50*time.Millisecond))
		want(t, ran, "fn did not run")
		isErr(t, cause, lease.ErrLeaseLost)
		isErr(t, err, lease.ErrLeaseLost)
		isErr(t, err, errInjected)
	})
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestUnreachableStore: a store that cannot answer is an error, not
// ErrNotAcquired, and fn does not run.
func TestUnreachableStore(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, s lease.Store) {
		t.Helper()
		ran := false
		err := lease.NewManager(s).Do(ctx, uniqueName(t), func(context.Context) error { ran = true; return nil },
			lease.TTL(time.Minute), lease.WaitAtMost(time.Second))
		want(t, err != nil && !errors.Is(err, lease.ErrNotAcquired), "Do on an unreachable store returned %v, want a store error", err)
		want(t, !ran, "fn ran without a lease")
		t.Log(err)
	}
	t.Run("redis-closed-port", func(t *testing.T) {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: time.Second, MaxRetries: -1})
		defer c.Close()
		check(t, redisstore.New(c, redisstore.Prefix(redisPrefix)))
	})
	t.Run("redis-stopped-mid-test", func(t *testing.T) {
		c := redis.NewClient(&redis.Options{Addr: testdb.RedisAddr(t)})
		s := redisstore.New(c, redisstore.Prefix(redisPrefix))
		noErr(t, lease.NewManager(s).Do(ctx, uniqueName(t), func(context.Context) error { return nil }, lease.TTL(time.Minute)))
		noErr(t, c.Close())
		check(t, s)
	})
	t.Run("database-closed", func(t *testing.T) {
		tg := testdb.Open(t, testdb.Postgres, nil)
		s := tableStore(t, tg.DB)
		noErr(t, tg.SQL.Close())
		check(t, s)
	})
}

// TestTableStoreRefusesTransactions: lease statements must commit at once,
// so a *gorm.DB inside a transaction is refused.
func TestTableStoreRefusesTransactions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		tx := tg.DB.Begin()
		noErr(t, tx.Error)
		defer tx.Rollback()
		_, err := sqlstore.New(tx, sqlstore.Table(table))
		want(t, err != nil && strings.Contains(err.Error(), "inside a transaction"), "sqlstore.New in a transaction: %v", err)
	})
}

// TestTableStoreUsesTheDatabaseClock: expires_at is the database's now
// plus the TTL, and a TTL of 0 is stored as 0.
func TestTableStoreUsesTheDatabaseClock(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		ctx := context.Background()
		s := tableStore(t, tg.DB)
		name := uniqueName(t)
		_, ok, err := s.Acquire(ctx, name, "owner-a", 10*time.Second)
		noErr(t, err)
		want(t, ok, "a free lease was refused")
		var left int64
		q := "SELECT expires_at - " + drivers.For(tg.Dialect).NowMillis() + " FROM " + drivers.For(tg.Dialect).QuoteIdent(table) + " WHERE lock_name = ?"
		noErr(t, tg.Plain.Raw(q, name).Scan(&left).Error)
		want(t, left > 9000 && left <= 10000, "expires_at is the database's now + %d ms, want + 10000", left)

		_, err = s.Refresh(ctx, name, "owner-a", 0)
		noErr(t, err)
		var exp int64
		noErr(t, tg.Plain.Raw("SELECT expires_at FROM "+drivers.For(tg.Dialect).QuoteIdent(table)+" WHERE lock_name = ?", name).Scan(&exp).Error)
		want(t, exp == 0, "expires_at after a TTL-0 refresh = %d, want 0", exp)
		_, err = s.Release(ctx, name, "owner-a")
		noErr(t, err)
	})
}

// TestRedisStoreKeys: expiry is Redis's own (PX), TTL 0 leaves the key
// without one, and the fence counter never expires.
func TestRedisStoreKeys(t *testing.T) {
	ctx := context.Background()
	s, c := redisStore(t)
	name := uniqueName(t)
	fence, ok, err := s.Acquire(ctx, name, "owner-a", 250*time.Millisecond)
	noErr(t, err)
	want(t, ok, "a free lease was refused")
	pttl := c.PTTL(ctx, s.Key(name)).Val()
	want(t, pttl > 0 && pttl <= 250*time.Millisecond, "PTTL %v, want (0, 250ms]", pttl)
	fttl := c.PTTL(ctx, s.Key(name)+":fence").Val()
	want(t, fttl > pttl && fttl <= 1250*time.Millisecond, "the fence counter expires %v, want a second after the lease (%v)", fttl, pttl)
	_, err = s.Refresh(ctx, name, "owner-a", 0)
	noErr(t, err)
	want(t, c.PTTL(ctx, s.Key(name)).Val() == -1, "TTL 0 must leave the key without expiry")
	_, err = s.Release(ctx, name, "owner-a")
	noErr(t, err)
	want(t, c.Exists(ctx, s.Key(name)).Val() == 0, "the key survived Release")
	// The fence starts from Redis's clock in microseconds (so that a
	// restart without persistence, or the counter's removal, continues
	// above it); once the clock has passed it, Release removes the counter.
	want(t, c.Exists(ctx, s.Key(name)+":fence").Val() == 0, "the fence counter survived Release")
	now, err := c.Time(ctx).Result()
	noErr(t, err)
	want(t, fence <= now.UnixMicro() && fence > now.Add(-time.Minute).UnixMicro(), "fence %d is not Redis's clock in µs (%d)", fence, now.UnixMicro())
}
