package holds_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/require"
)

// TestCallerSnapshotNeverOversells: a caller's transaction reads something
// (which fixes its snapshot at REPEATABLE READ), another acquirer takes the
// last slot and commits, and then the caller calls Acquire inside its
// transaction. A plain count in that transaction still sees the slot free,
// which the test shows first (before the fix, Acquire granted a second
// hold on PostgreSQL REPEATABLE READ and SERIALIZABLE and on MariaDB's
// default REPEATABLE READ); Acquire must nevertheless grant nothing
// (PostgreSQL REPEATABLE READ and SERIALIZABLE: refuse with ErrUnsupported;
// SQLite without _txlock=immediate: fail with SQLITE_BUSY_SNAPSHOT; MariaDB
// with innodb_snapshot_isolation: fail with a retryable ER_CHECKREAD), and
// the table must end with one hold.
func TestCallerSnapshotNeverOversells(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		callerSnapshot(t, tg)
		if tg.Is(dialects.MariaDB) {
			// MariaDB 11.8 turns innodb_snapshot_isolation on by default.
			t.Run("innodb_snapshot_isolation", func(t *testing.T) {
				callerSnapshot(t, testdb.Open(t, testdb.MySQL, func(dsn string) string { return dsn + "&innodb_snapshot_isolation=ON" }))
			})
		}
	})
}

func callerSnapshot(t *testing.T, tg *testdb.Target) {
	ctx := context.Background()
	levels := []sql.IsolationLevel{sql.LevelDefault, sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable}
	if tg.Is(dialects.SQLite) {
		// With _txlock=immediate the caller's BEGIN already holds the
		// writer lock, so nobody can commit in between; with deferred
		// transactions the snapshot can go stale, and SQLite refuses the
		// upgrade (SQLITE_BUSY_SNAPSHOT).
		tg = testdb.Open(t, testdb.SQLite, func(dsn string) string { return strings.Replace(dsn, "&_txlock=immediate", "", 1) })
		levels = []sql.IsolationLevel{sql.LevelDefault}
	}
	if tg.Dialect.Engine == dialects.TiDB {
		// TiDB refuses to begin a SERIALIZABLE transaction (error 8048).
		levels = levels[:3]
	}
	setup(t, tg)
	for _, level := range levels {
		t.Run(level.String(), func(t *testing.T) {
			s, other := newSeat(t, tg.DB, 1), newSeat(t, tg.DB, 1)
			tx := tg.DB.Begin(&sql.TxOptions{Isolation: level})
			require.NoError(t, tx.Error)
			defer tx.Rollback()
			// The caller's own read, of another row: it fixes a REPEATABLE
			// READ snapshot and locks nothing Acquire needs.
			require.NoError(t, tx.First(&seat{}, other.ID).Error)

			theirs, err := holds.Acquire(ctx, tg.DB, s, "them", inTable)
			if err != nil || theirs == nil {
				t.Fatalf("the other acquirer: %+v, %v", theirs, err)
			}
			var seen int64
			require.NoError(t, tx.Table(holdsTable).Where("resource_id = ?", theirs.ResourceID).Count(&seen).Error)
			stale := seen == 0

			mine, err := holds.Acquire(ctx, tx, s, "me", inTable)
			cerr := tx.Commit().Error
			t.Logf("%s: plain count in the caller's snapshot saw %d; Acquire = %v, %v; commit: %v", tg.Name, seen, mine != nil, err, cerr)
			if n := activeRows(t, tg.DB, s); n != 1 {
				t.Fatalf("%d active holds on a seat of capacity 1 (Acquire = %+v, %v; commit: %v)", n, mine, err, cerr)
			}
			switch {
			case tg.Is(dialects.Postgres) && (level == sql.LevelRepeatableRead || level == sql.LevelSerializable):
				// SERIALIZABLE would not save it: the other acquirer's
				// transaction is not serializable.
				if !stale || !errors.Is(err, dialects.ErrUnsupported) {
					t.Fatalf("%s: stale=%v, Acquire error %v; want ErrUnsupported", level, stale, err)
				}
			case tg.Is(dialects.SQLite):
				if mine != nil || !dialects.IsRetryable(err) {
					t.Fatalf("SQLite: Acquire = %+v, %v; want SQLITE_BUSY_SNAPSHOT", mine, err)
				}
			case tg.Dialect.IsMySQLFamily() && err != nil && !errors.Is(err, holds.ErrFull):
				// ER_CHECKREAD under innodb_snapshot_isolation: the caller
				// must replay its transaction.
				if mine != nil || !dialects.IsRetryable(err) {
					t.Fatalf("Acquire = %+v, %v; want nil, ErrFull or a retryable error", mine, err)
				}
			default:
				if !errors.Is(err, holds.ErrFull) || mine != nil {
					t.Fatalf("Acquire = %+v, %v; want nil, ErrFull", mine, err)
				}
			}
			if tg.Dialect.IsMySQLFamily() && (level == sql.LevelDefault || level == sql.LevelRepeatableRead) && !stale {
				t.Fatalf("the caller's snapshot saw the other hold: this case no longer tests a stale snapshot")
			}
		})
	}
}
