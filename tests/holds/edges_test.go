package holds_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// The edge cases of issue 12, on the package's seats and holds tables
// (helpers_test.go); the migration test's own tables start with i12_.

// "alice" and "alice " are two holders everywhere: each gets a hold of its
// own, and releasing one leaves the other's slot taken. The server's own
// comparison shows first why this needs care (MariaDB's utf8mb4_bin pads).
func TestHoldersCompareExactly(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		ctx := context.Background()
		var padded int
		q := "SELECT CASE WHEN CAST('alice' AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin = 'alice ' THEN 1 ELSE 0 END"
		if tg.Dialect.IsMySQLFamily() {
			require.NoError(t, tg.DB.Raw(q).Scan(&padded).Error)
			t.Logf("%s: 'alice' = 'alice ' under utf8mb4_bin: %d", tg.Name, padded)
		}
		pairs := [][2]string{{"alice", "alice "}, {"bob", "bob  "}, {"carol", "Carol"}, {"dave\t", "dave"}}
		distinct := 0
		for _, p := range pairs {
			s := newSeat(t, tg.DB, 5)
			a, err := holds.Acquire(ctx, tg.DB, s, p[0], inTable)
			require.NoError(t, err)
			b, err := holds.Acquire(ctx, tg.DB, s, p[1], inTable)
			require.NoError(t, err)
			require.NotNil(t, a)
			require.NotNil(t, b)
			require.NotEqualf(t, a.ID, b.ID, "%q was handed %q's hold", p[1], p[0])
			require.Equal(t, p[1], b.Holder)
			mine, err := holds.ActiveFor(ctx, tg.DB, s, p[1], inTable)
			require.NoError(t, err)
			require.Equalf(t, b.ID, mine.ID, "ActiveFor(%q)", p[1])
			require.NoError(t, holds.Release(ctx, tg.DB, b))
			still, err := holds.ActiveFor(ctx, tg.DB, s, p[0], inTable)
			require.NoError(t, err)
			require.NotNilf(t, still, "releasing %q freed %q's slot", p[1], p[0])
			n, err := holds.Available(ctx, tg.DB, s, inTable)
			require.NoError(t, err)
			require.Equal(t, 4, n)
			distinct++
		}
		t.Logf("%s: %d of %d holder pairs kept apart", tg.Name, distinct, len(pairs))
	})
}

// Inside a caller's REPEATABLE READ transaction on MariaDB, a holder whose
// hold another connection committed after the transaction's snapshot gets
// that hold back, not (nil, nil): the plain read the test does first shows
// the snapshot missing it.
func TestCallerSnapshotOwnHold(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if tg.Is(dialects.SQLite) {
			t.Skip("SQLite: the caller's transaction holds the writer lock (_txlock=immediate); nobody commits in between")
		}
		setup(t, tg)
		ctx := context.Background()
		level := sql.LevelRepeatableRead
		if tg.Is(dialects.Postgres) {
			level = sql.LevelReadCommitted // REPEATABLE READ is refused there (ErrUnsupported)
		}
		const rounds = 5
		got := 0
		for i := 0; i < rounds; i++ {
			s, other := newSeat(t, tg.DB, 100), newSeat(t, tg.DB, 1)
			tx := tg.DB.Begin(&sql.TxOptions{Isolation: level})
			require.NoError(t, tx.Error)
			require.NoError(t, tx.First(&seat{}, other.ID).Error) // fixes the snapshot
			theirs, err := holds.Acquire(ctx, tg.DB, s, "alice", inTable)
			require.NoError(t, err)
			require.NotNil(t, theirs)
			var seen int64
			require.NoError(t, tx.Table(holdsTable).Where("id = ?", theirs.ID).Count(&seen).Error)
			mine, err := holds.Acquire(ctx, tx, s, "alice", inTable)
			require.NoError(t, tx.Commit().Error)
			require.NoError(t, err)
			require.NotNilf(t, mine, "%s round %d: alice's own hold came back as 'full' (snapshot saw it: %d)", tg.Name, i, seen)
			require.Equal(t, theirs.ID, mine.ID)
			if tg.Dialect.IsMySQLFamily() {
				require.Zerof(t, seen, "the snapshot saw the hold: the case no longer tests a stale snapshot")
			}
			got++
		}
		t.Logf("%s at %s: %d of %d rounds returned the caller's hold", tg.Name, level, got, rounds)
	})
}

// A db context that has ended stops Acquire, Release, Available, ActiveFor
// and Extend before anything is written, with the usual idiom
// (context.Background() and db.WithContext(r.Context())); a db context that
// ends while Acquire waits for the resource's row lock stops it too, and
// no hold is written after the lock comes free.
func TestCancelledDBContextStops(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		bg := context.Background()
		s := newSeat(t, tg.DB, 3)
		rctx, cancel := context.WithCancel(bg)
		cancel()
		req := tg.DB.WithContext(rctx)
		stopped := 0
		h, err := holds.Acquire(bg, req, s, "u:1", inTable)
		require.ErrorIs(t, err, context.Canceled)
		require.Nil(t, h)
		stopped++
		_, err = holds.Available(bg, req, s, inTable)
		require.ErrorIs(t, err, context.Canceled)
		stopped++
		_, err = holds.ActiveFor(bg, req, s, "u:1", inTable)
		require.ErrorIs(t, err, context.Canceled)
		stopped++
		require.Zero(t, holdRows(t, tg.DB, s), "a hold was written under a cancelled context")
		mine, err := holds.Acquire(bg, tg.DB, s, "u:2", inTable)
		require.NoError(t, err)
		require.ErrorIs(t, holds.Release(bg, req, mine), context.Canceled)
		require.ErrorIs(t, holds.Extend(bg, req, mine, time.Minute), context.Canceled)
		stopped += 2
		got, err := holds.ActiveFor(bg, tg.DB, s, "u:2", inTable)
		require.NoError(t, err)
		require.Truef(t, got != nil && got.ReleasedAt == nil && got.ExpiresAt == nil, "the hold changed under a cancelled context: %+v", got)
		t.Logf("%s: %d calls stopped by an ended db context before any statement", tg.Name, stopped)

		if tg.Is(dialects.SQLite) {
			return // a busy wait inside SQLite does not watch the context
		}
		// Ended while waiting: a transaction holds the seat's row lock.
		blocker := tg.Plain.Begin()
		require.NoError(t, blocker.Error)
		require.NoError(t, blocker.Exec("SELECT id FROM "+seatsTable+" WHERE id = ? FOR UPDATE", s.ID).Error)
		rctx, cancel = context.WithCancel(bg)
		done := make(chan error, 1)
		go func() {
			_, err := holds.Acquire(bg, tg.DB.WithContext(rctx), s, "u:3", inTable)
			done <- err
		}()
		time.Sleep(100 * time.Millisecond) // let it queue on the row lock
		cancel()
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			require.NoError(t, blocker.Rollback().Error)
			t.Fatalf("Acquire kept waiting for the row lock after its db context ended")
		}
		require.NoError(t, blocker.Rollback().Error)
		require.ErrorIs(t, err, context.Canceled)
		require.NotContains(t, err.Error(), "already been committed or rolled back")
		time.Sleep(50 * time.Millisecond)
		var n int64
		require.NoError(t, tg.DB.Table(holdsTable).Where("holder = ?", "u:3").Count(&n).Error)
		require.Zero(t, n, "a hold was written after the db context ended")
		t.Logf("%s: a wait on the row lock ended by the db context: %v", tg.Name, err)
	})
}

// An explicit ctx that expires inside Acquire's transaction surfaces as
// the context's error.
func TestExpiredContextIsTheError(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if tg.Is(dialects.SQLite) {
			t.Skip("SQLite's busy wait does not watch the context")
		}
		setup(t, tg)
		s := newSeat(t, tg.DB, 1)
		blocker := tg.Plain.Begin()
		require.NoError(t, blocker.Error)
		defer blocker.Rollback()
		require.NoError(t, blocker.Exec("SELECT id FROM "+seatsTable+" WHERE id = ? FOR UPDATE", s.ID).Error)
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		_, err := holds.Acquire(ctx, tg.DB, s, "u:1", inTable)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotContains(t, err.Error(), "already been committed or rolled back")
		t.Logf("%s: %v", tg.Name, err)
	})
}

// db.Table with anything but a plain table name is refused before any SQL,
// never replaced by the model's own table.
func TestTableExpressionRefused(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		s := newSeat(t, tg.DB, 5)
		refused := 0
		for _, bad := range []string{"x; DROP TABLE " + seatsTable, seatsTable + " s", "(SELECT 1) AS t"} {
			h, err := holds.Acquire(context.Background(), tg.DB.Table(bad), s, "u:1", inTable)
			require.ErrorIsf(t, err, holds.ErrInvalid, "db.Table(%q)", bad)
			require.Nil(t, h)
			refused++
		}
		require.Zero(t, holdRows(t, tg.DB, s), "a hold was taken on the model's table")
		require.True(t, tg.DB.Migrator().HasTable(seatsTable))
		t.Logf("%s: %d table expressions refused", tg.Name, refused)
	})
}

// Six processes starting together each run Migrate on a fresh database:
// all succeed, ten rounds running.
func TestConcurrentMigrate(t *testing.T) {
	for _, kind := range []string{testdb.SQLite, testdb.Postgres, testdb.MySQL} {
		t.Run(kind, func(t *testing.T) {
			tg := testdb.Get(t, kind)
			pools := make([]*gorm.DB, 6)
			for i := range pools {
				pools[i] = testdb.Open(t, kind, nil).DB
			}
			const rounds = 10
			var failures atomic.Int64
			var first error
			for round := 0; round < rounds; round++ {
				table := fmt.Sprintf("i12_mig_%d", round)
				require.NoError(t, tg.DB.Migrator().DropTable(table))
				errs, _ := scenario.Race(len(pools), func(w int) error {
					return holds.Migrate(pools[w], holds.Table(table))
				})
				for _, err := range errs {
					if err != nil {
						failures.Add(1)
						if first == nil {
							first = err
						}
					}
				}
				require.True(t, tg.DB.Migrator().HasTable(table))
				require.NoError(t, tg.DB.Migrator().DropTable(table))
			}
			t.Logf("%s: %d of %d concurrent Migrate calls failed over %d rounds", tg.Name, failures.Load(), rounds*len(pools), rounds)
			require.Zerof(t, failures.Load(), "first failure: %v", first)
		})
	}
}

// With GORM's PrepareStmt mode the statements go through its prepared
// pool, and the savepoints of a caller's transaction past it (MySQL does
// not prepare SAVEPOINT).
func TestPreparedStatementMode(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		db := tg.DB.Session(&gorm.Session{PrepareStmt: true})
		ctx := context.Background()
		s := newSeat(t, tg.DB, 1)
		h, err := holds.Acquire(ctx, db, s, "p:1", inTable)
		require.NoError(t, err)
		require.NotNil(t, h)
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			again, err := holds.Acquire(ctx, tx, s, "p:1", inTable)
			if err == nil && (again == nil || again.ID != h.ID) {
				err = fmt.Errorf("the holder's own hold came back as %+v", again)
			}
			if err == nil {
				var full *holds.Hold
				if full, err = holds.Acquire(ctx, tx, s, "p:2", inTable); !errors.Is(err, holds.ErrFull) || full != nil {
					err = fmt.Errorf("a second hold on a seat of one: %+v, %v; want nil, ErrFull", full, err)
				} else {
					err = nil
				}
			}
			return err
		}))
		require.NoError(t, holds.Release(ctx, db, h))
		require.NotNil(t, h.ReleasedAt)
	})
}

// Extend inside a caller's REPEATABLE READ transaction finds a hold that
// another connection committed after the transaction's snapshot.
func TestExtendInCallerSnapshot(t *testing.T) {
	tg := testdb.Get(t, testdb.MySQL)
	setup(t, tg)
	ctx := context.Background()
	s, other := newSeat(t, tg.DB, 3), newSeat(t, tg.DB, 1)
	tx := tg.DB.Begin(&sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	require.NoError(t, tx.Error)
	defer tx.Rollback()
	require.NoError(t, tx.First(&seat{}, other.ID).Error)
	h, err := holds.Acquire(ctx, tg.DB, s, "late", inTable, holds.TTL(time.Minute))
	require.NoError(t, err)
	require.NoError(t, holds.Extend(ctx, tx, h, time.Hour))
	require.NoError(t, tx.Commit().Error)
	require.True(t, h.ExpiresAt.After(time.Now().Add(50*time.Minute)), "expiry %v", h.ExpiresAt)
}

// Release inside a caller's REPEATABLE READ transaction of a hold that was
// granted and released after the transaction's snapshot: released
// elsewhere (ErrLost, for a copy of the hold), not "not found".
func TestReleaseInCallerSnapshot(t *testing.T) {
	tg := testdb.Get(t, testdb.MySQL)
	setup(t, tg)
	ctx := context.Background()
	s, other := newSeat(t, tg.DB, 3), newSeat(t, tg.DB, 1)
	tx := tg.DB.Begin(&sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	require.NoError(t, tx.Error)
	defer tx.Rollback()
	require.NoError(t, tx.First(&seat{}, other.ID).Error)
	h, err := holds.Acquire(ctx, tg.DB, s, "late", inTable)
	require.NoError(t, err)
	require.NoError(t, holds.Release(ctx, tg.DB, h))
	copyOf := &holds.Hold{ID: h.ID}
	require.ErrorIs(t, holds.Release(ctx, tx, copyOf, inTable), holds.ErrLost)
	require.NoError(t, holds.Release(ctx, tx, h), "this handle's second release")
	require.NoError(t, tx.Commit().Error)
}
