// Package fence_test attacks fenced writes, lease-guarded transactions
// and leader election on real databases and lease stores. Every table,
// lock name and Redis key starts with i16_ (keys with "i16-test:").
package fence_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

const leaseTable = "i16_lock_leases"

var redisPrefix = func() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "i16-test:" + hex.EncodeToString(b) + ":"
}()

// account is the protected row.
type account struct {
	ID      uint `gorm:"primaryKey"`
	Balance int64
	lockplugin.Fence
}

func (account) TableName() string { return "i16_accounts" }

// versioned has both guards.
type versioned struct {
	ID      uint `gorm:"primaryKey"`
	Balance int64
	lockplugin.Version
	lockplugin.Fence
}

func (versioned) TableName() string { return "i16_versioned" }

// plainRow has no Fence column.
type plainRow struct {
	ID      uint `gorm:"primaryKey"`
	Balance int64
}

func (plainRow) TableName() string { return "i16_plain" }

// storeCase is one lease store and how a holder loses its lease on it:
// by expiry (table, Redis: a short TTL and a paused holder), or, on the
// local store, which has no TTL, by a release the paused holder does not
// know about.
type storeCase struct {
	name  string
	store lease.Store
	ttl   bool
}

func storeCases(t *testing.T, tg *testdb.Target) []storeCase {
	t.Helper()
	ts, err := sqlstore.New(tg.DB, sqlstore.Table(leaseTable))
	noErr(t, err)
	ls, err := lease.NewLocalStore(t.TempDir())
	noErr(t, err)
	rc := testdb.Redis(t)
	return []storeCase{
		{"table", ts, true},
		{"redis", redisstore.New(rc, redisstore.Prefix(redisPrefix)), true},
		{"local", ls, false},
	}
}

// takeover gives the lease on name to a new holder while old is paused:
// old's TTL runs out (or, on the local store, it is released under it).
func takeover(t *testing.T, sc storeCase, m *lease.Manager, old *lease.Lease, ttl time.Duration) *lease.Lease {
	t.Helper()
	ctx := context.Background()
	if sc.ttl {
		time.Sleep(ttl + 50*time.Millisecond) // the holder is paused past its TTL
	} else {
		noErr(t, old.Release(ctx)) // its goroutine, paused, does not know
	}
	l, err := m.Acquire(ctx, old.Name(), lease.TTL(10*time.Second), lease.WaitAtMost(5*time.Second))
	noErr(t, err)
	want(t, l.Fence() > old.Fence(), "new fence %d not above %d", l.Fence(), old.Fence())
	return l
}

// fenceOnly is a holder that shows only its fence: a lease whose holder
// checked Done just before a pause, so that the database guard alone
// stands between its write and the row.
type fenceOnly struct{ l *lease.Lease }

func (f fenceOnly) Fence() int64 { return f.l.Fence() }
func (f fenceOnly) Name() string { return f.l.Name() }

func noErr(t testing.TB, err error, what ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%v: unexpected error: %v", what, err)
	}
}

func isErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

func want(t testing.TB, cond bool, format string, args ...any) {
	t.Helper()
	if !cond {
		t.Fatalf(format, args...)
	}
}

// refusedOnTiDB reports whether tg is TiDB, where fenced writes and the
// lease table store are refused (dialects: a stale write stopped by the
// fence is not reported as such there, and a retried UPDATE keeps the
// discarded attempt's insert id). It checks both refusals, before any row
// is written, so that the suites prove what TiDB gets instead of skipping.
func refusedOnTiDB(t *testing.T, tg *testdb.Target) bool {
	t.Helper()
	if tg.Kind() != testdb.TiDB || tg.Dialect.Supports(dialects.FencedWrite) {
		return false
	}
	ctx := context.Background()
	ls, err := lease.NewLocalStore(t.TempDir())
	noErr(t, err)
	l, err := lease.NewManager(ls).Acquire(ctx, testdb.Unique(t, "i16_tidb"))
	noErr(t, err)
	defer func() { _ = l.Release(ctx) }()
	tg.Reset(t, &account{})
	row := account{Balance: 1}
	err = tg.DB.WithContext(lockplugin.WithFence(ctx, l)).Create(&row).Error
	want(t, errors.Is(err, lockplugin.ErrUnsupported), "fenced write on TiDB: %v, want ErrUnsupported", err)
	var n int64
	noErr(t, tg.DB.Model(&account{}).Count(&n).Error)
	want(t, n == 0, "the refused fenced write on TiDB wrote %d rows", n)
	_, err = sqlstore.New(tg.DB, sqlstore.Table(testdb.Unique(t, "i16_tidb_leases")))
	want(t, errors.Is(err, lockplugin.ErrUnsupported), "lease table store on TiDB: %v, want ErrUnsupported", err)
	t.Logf("TiDB: fenced writes and the lease table store are refused before any SQL")
	return true
}
