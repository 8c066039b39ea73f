// Package busy_test proves the shared sentinel: every mechanism's "someone
// else has it" answer, on every database that has the mechanism, matches
// errors.Is(err, lockplugin.ErrBusy) and the mechanism's own sentinel. Each
// case first shows that the answer is really the busy one (the other
// holder is there, the mechanism's sentinel matches) and, where a raw
// answer exists (a row lock's driver error without the plugin), that the
// raw answer does not match: the match comes from lockplugin.
package busy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// Table and key names of this package, apart from every other package's.
const (
	rowsTable   = "busy_i18_rows"
	leaseTable  = "busy_i18_leases"
	seatsTable  = "busy_i18_seats"
	holdsTable  = "busy_i18_holds"
	redisPrefix = "busy-i18:lease:"
)

// servers are the databases with row locks, advisory locks, the lease
// table store and holds: PostgreSQL, MariaDB (MySQL) and TiDB. testdb.Get
// skips one that does not answer, and fails the run under CI.
func servers() []string { return []string{testdb.Postgres, testdb.MySQL, testdb.TiDB} }

// each runs fn on each kind's Target (skipped, or failed under CI, when
// its server is missing).
func each(t *testing.T, kinds []string, fn func(t *testing.T, tg *testdb.Target)) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) { fn(t, testdb.Get(t, kind)) })
	}
}

// busy checks that err is a busy answer: lockplugin.ErrBusy and the
// mechanism's own sentinel both match.
func busy(t *testing.T, what string, err, own error) {
	t.Helper()
	require.Errorf(t, err, "%s: no error while someone else holds it", what)
	require.ErrorIsf(t, err, own, "%s: the mechanism's own sentinel", what)
	require.ErrorIsf(t, err, lockplugin.ErrBusy, "%s: lockplugin.ErrBusy", what)
	t.Logf("%s: %v", what, err)
}

type busyRow struct {
	ID int
	N  int
}

func (busyRow) TableName() string { return rowsTable }

func TestRowLocks(t *testing.T) {
	each(t, servers(), func(t *testing.T, tg *testdb.Target) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		tg.Reset(t, &busyRow{})
		require.NoError(t, tg.DB.Create(&busyRow{ID: 1}).Error)

		holder := tg.DB.WithContext(ctx).Begin()
		require.NoError(t, holder.Error)
		defer holder.Rollback()
		var r busyRow
		require.NoError(t, holder.Clauses(lockplugin.ForUpdate()).First(&r, 1).Error, "the holder's lock")

		try := func(opts ...lockplugin.LockOption) error {
			return tg.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
				return tx.Clauses(lockplugin.ForUpdate(opts...)).First(&busyRow{}, 1).Error
			})
		}
		if tg.Dialect.Supports(dialects.NoWait) {
			busy(t, "ForUpdate(NoWait)", try(lockplugin.NoWait), lockplugin.ErrLockNotAvailable)

			// The raw answer, without the plugin: the driver's own error,
			// which matches neither sentinel.
			raw := tg.Plain.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
				return tx.Clauses(clause.Locking{Strength: "UPDATE", Options: "NOWAIT"}).First(&busyRow{}, 1).Error
			})
			require.Error(t, raw, "plain GORM NOWAIT while the row is locked")
			require.Falsef(t, errors.Is(raw, lockplugin.ErrBusy), "the driver's raw refusal %v matches ErrBusy without the plugin", raw)
		} else {
			t.Logf("%s has no NOWAIT: that case does not apply", tg.Dialect)
		}
		err := try(lockplugin.WaitAtMost(time.Second))
		busy(t, "ForUpdate(WaitAtMost(1s))", err, lockplugin.ErrLockNotAvailable)
	})
}

func TestAdvisoryLocks(t *testing.T) {
	each(t, servers(), func(t *testing.T, tg *testdb.Target) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		name := testdb.Unique(t, "busy-i18")
		held, err := advisory.Acquire(ctx, tg.DB, name)
		require.NoError(t, err, "the holder's lock")
		defer held.Release(ctx)

		_, err = advisory.Acquire(ctx, tg.DB, name, advisory.WaitAtMost(0))
		busy(t, "Acquire(WaitAtMost(0))", err, advisory.ErrTimeout)
		_, err = advisory.Acquire(ctx, tg.DB, name, advisory.WaitAtMost(200*time.Millisecond))
		busy(t, "Acquire(WaitAtMost(200ms))", err, advisory.ErrTimeout)
		err = advisory.With(ctx, tg.DB, name, func(*gorm.DB) error { t.Error("fn ran while the lock was held"); return nil }, advisory.WaitAtMost(0))
		busy(t, "With(WaitAtMost(0))", err, advisory.ErrTimeout)

		if tg.Dialect.Supports(dialects.AdvisoryXactLock) {
			xname := testdb.Unique(t, "busy-i18-xact")
			holder := tg.DB.WithContext(ctx).Begin()
			require.NoError(t, holder.Error)
			defer holder.Rollback()
			require.NoError(t, advisory.WithTx(holder, xname), "the holder's transaction lock")
			err := tg.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return advisory.WithTx(tx, xname, advisory.WaitAtMost(0)) })
			busy(t, "WithTx(WaitAtMost(0))", err, advisory.ErrTimeout)
		}
	})
}

func TestLeases(t *testing.T) {
	stores := map[string]func(t *testing.T) lease.Store{
		"local": func(t *testing.T) lease.Store {
			s, err := lease.NewLocalStore(t.TempDir())
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		"redis": func(t *testing.T) lease.Store {
			return redisstore.New(testdb.Redis(t), redisstore.Prefix(redisPrefix))
		},
	}
	for _, kind := range append([]string{testdb.SQLite}, servers()...) {
		stores["table/"+kind] = func(t *testing.T) lease.Store {
			tg := testdb.Get(t, kind)
			s, err := sqlstore.New(tg.DB, sqlstore.Table(leaseTable))
			require.NoError(t, err)
			return s
		}
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			m := lease.NewManager(newStore(t), lease.PollInterval(10*time.Millisecond))
			lname := testdb.Unique(t, "busy-i18")
			held, err := m.Acquire(ctx, lname, lease.TTL(time.Minute))
			require.NoError(t, err, "the holder's lease")
			defer held.Release(ctx)

			_, err = m.Acquire(ctx, lname)
			busy(t, "Acquire", err, lease.ErrNotAcquired)
			_, err = m.Acquire(ctx, lname, lease.WaitAtMost(0))
			busy(t, "Acquire(WaitAtMost(0))", err, lease.ErrNotAcquired)
			// A wait that outlasts the store's first answer: a store
			// that has not answered once by the end of the wait reports
			// that (ErrStoreTimeout), not busy, and TiDB's transaction of
			// a table-store acquire passed 50 ms under CI's load.
			_, err = m.Acquire(ctx, lname, lease.WaitAtMost(500*time.Millisecond))
			busy(t, "Acquire(WaitAtMost(500ms))", err, lease.ErrNotAcquired)
			err = m.Do(ctx, lname, func(context.Context) error { t.Error("fn ran while the lease was held"); return nil })
			busy(t, "Do", err, lease.ErrNotAcquired)
			var na *lease.NotAcquiredError
			require.ErrorAs(t, err, &na)
			require.Equal(t, lname, na.Name)
		})
	}
	t.Run("election", func(t *testing.T) {
		ctx := context.Background()
		s := stores["local"](t)
		leader, err := election.New(s, "busy-i18-election")
		require.NoError(t, err)
		term, err := leader.TryCampaign(ctx)
		require.NoError(t, err)
		defer term.Resign(ctx)
		other, err := election.New(s, "busy-i18-election")
		require.NoError(t, err)
		_, err = other.TryCampaign(ctx)
		busy(t, "TryCampaign", err, election.ErrNotLeader)
	})
}

type busySeat struct {
	ID       uint
	Capacity int
}

func (busySeat) TableName() string { return seatsTable }

func (s busySeat) HoldCapacity() int { return s.Capacity }

func TestHoldsFull(t *testing.T) {
	each(t, append([]string{testdb.SQLite}, servers()...), func(t *testing.T, tg *testdb.Target) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		tg.Reset(t, &busySeat{})
		require.NoError(t, tg.DB.Migrator().DropTable(holdsTable))
		in := holds.Table(holdsTable)
		require.NoError(t, holds.Migrate(tg.DB, in))
		seat := &busySeat{Capacity: 1}
		require.NoError(t, tg.DB.Create(seat).Error)

		h, err := holds.Acquire(ctx, tg.DB, seat, "holder-a", in)
		require.NoError(t, err, "the holder's hold")
		require.NotNil(t, h, "the holder's hold")
		full, err := holds.IsFull(ctx, tg.DB, seat, in)
		require.NoError(t, err)
		require.True(t, full, "capacity 1 with one hold: IsFull")

		h, err = holds.Acquire(ctx, tg.DB, seat, "holder-b", in)
		require.Nil(t, h, "a hold granted beyond the capacity")
		busy(t, "Acquire on a full resource", err, holds.ErrFull)
		t.Logf("Acquire on a full resource: %v", err)
	})
}
