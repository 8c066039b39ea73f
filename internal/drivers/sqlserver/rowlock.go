package sqlserver

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// RowLock is table hints after each locked table in FROM (WITH (XLOCK,
// ROWLOCK, READPAST)), with a wait bounded by LOCK_TIMEOUT.
func (*Driver) RowLock() sqldriver.RowLock { return rowLock{} }

type rowLock struct{ sqldriver.RowLockDefaults }

// HintsInFrom is true: SQL Server puts locks in FROM, as table hints.
func (rowLock) HintsInFrom() bool { return true }

// TableHint is " WITH (XLOCK, ROWLOCK, READPAST)".
func (rowLock) TableHint(keywords []string) string {
	return " WITH (" + strings.Join(keywords, ", ") + ")"
}

// Refusal refuses FOR SHARE SKIP LOCKED.
func (rowLock) Refusal(q sqldriver.LockedQuery) (feature, reason string) {
	if q.Strength() == dialects.ForShare && q.SkipLocked() {
		return "FOR SHARE SKIP LOCKED", "lockplugin does not combine READPAST with the REPEATABLEREAD hint that FOR SHARE takes there: it is not run against a live server; use ForUpdate(SkipLocked)"
	}
	return "", ""
}

// SkipLockedRefused explains error 650: READPAST at an isolation level
// that refuses it.
func (rowLock) SkipLockedRefused(err error, lock string) error {
	if !dialects.IsReadPastRefused(err) {
		return nil
	}
	return fmt.Errorf("%w: %s on SQL Server needs the transaction at READ COMMITTED or REPEATABLE READ, and this one runs at another isolation level "+
		"that refuses the READPAST hint (error 650, e.g. SERIALIZABLE or READ UNCOMMITTED); nothing was read or locked; begin the transaction with "+
		"sql.TxOptions{Isolation: sql.LevelReadCommitted}, or lock without SkipLocked: %w", dialects.ErrUnsupported, lock, err)
}

// WaitSetter is SET LOCK_TIMEOUT.
func (rowLock) WaitSetter() sqldriver.WaitSetter { return lockTimeout{} }

// The statements around a bounded wait, exact SQL (tests compare it).
const (
	setLockTimeout     = "DECLARE @lockplugin_prev int = @@LOCK_TIMEOUT; SET LOCK_TIMEOUT %d; SELECT @lockplugin_prev"
	restoreLockTimeout = "SET LOCK_TIMEOUT %d"
)

// lockTimeout bounds a wait with LOCK_TIMEOUT, in milliseconds. It belongs
// to the session, not the transaction: it must be put back whatever the
// query's outcome. The value is an integer lockplugin formats itself,
// never user text.
type lockTimeout struct{}

func (lockTimeout) Bound(wait time.Duration) sqldriver.WaitBound {
	return sqldriver.WaitBound{
		Read:    sqldriver.Statement{SQL: fmt.Sprintf(setLockTimeout, sqldriver.WaitMillis(wait))},
		Columns: 1, Prev: 1,
		ReadDoing: "setting LOCK_TIMEOUT",
		On:        "SQL Server",
	}
}

func (lockTimeout) Restore(prev []string) (sqldriver.WaitRestore, error) {
	if len(prev) != 1 {
		return sqldriver.WaitRestore{}, fmt.Errorf("LOCK_TIMEOUT: %d previous values, want 1", len(prev))
	}
	ms, err := strconv.ParseInt(prev[0], 10, 64)
	if err != nil {
		return sqldriver.WaitRestore{}, err
	}
	return sqldriver.WaitRestore{
		Statement:   sqldriver.Statement{SQL: fmt.Sprintf(restoreLockTimeout, ms)},
		Doing:       fmt.Sprintf("restoring LOCK_TIMEOUT to %d", ms),
		Consequence: " (the connection keeps the bound until it is reset)",
	}, nil
}
