package mysql

import (
	"fmt"
	"strconv"
	"time"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// RowLock is the standard clause (FOR UPDATE NOWAIT, LOCK IN SHARE MODE
// before 8.0.1), with a wait bounded by the session's lock wait timeouts
// on MySQL and inline (FOR UPDATE WAIT n) where the outer driver says so
// (MariaDB, TiDB).
func (m *Driver) RowLock() sqldriver.RowLock { return rowLock{m: m} }

type rowLock struct {
	sqldriver.RowLockDefaults
	m *Driver
}

// WaitSetter is SET SESSION innodb_lock_wait_timeout and
// lock_wait_timeout, where the outer driver bounds waits with a setting.
func (r rowLock) WaitSetter() sqldriver.WaitSetter {
	if r.m.Outer().LockWaitStyle() != sqldriver.WaitSetting {
		return nil
	}
	return lockWaitTimeouts{on: r.m.Outer().Dialect().String()}
}

// The statements around a bounded wait, exact SQL (tests compare it). Two
// statements: the MySQL driver sends one per round trip unless
// multiStatements is set.
const (
	readLockTimeouts = "SELECT @@SESSION.innodb_lock_wait_timeout, @@SESSION.lock_wait_timeout"
	setLockTimeouts  = "SET SESSION innodb_lock_wait_timeout = %d, lock_wait_timeout = %d"
)

// lockWaitTimeouts bounds a wait with both timeouts, in whole seconds:
// innodb_lock_wait_timeout bounds the wait for an InnoDB row lock,
// lock_wait_timeout the wait for the table's metadata lock (an ALTER TABLE
// in progress), which MariaDB's WAIT n bounds too. They belong to the
// session, so they are put back whatever the query's outcome.
type lockWaitTimeouts struct{ on string }

func (w lockWaitTimeouts) Bound(wait time.Duration) sqldriver.WaitBound {
	secs := sqldriver.WaitSeconds(wait)
	return sqldriver.WaitBound{
		Read:    sqldriver.Statement{SQL: readLockTimeouts},
		Columns: 2, Prev: 2,
		ReadDoing: "reading innodb_lock_wait_timeout",
		Set:       sqldriver.Statement{SQL: fmt.Sprintf(setLockTimeouts, secs, secs)},
		SetDoing:  "setting innodb_lock_wait_timeout",
		On:        w.on,
	}
}

func (lockWaitTimeouts) Restore(prev []string) (sqldriver.WaitRestore, error) {
	if len(prev) != 2 {
		return sqldriver.WaitRestore{}, fmt.Errorf("lock wait timeouts: %d previous values, want 2", len(prev))
	}
	row, err := strconv.ParseInt(prev[0], 10, 64)
	if err != nil {
		return sqldriver.WaitRestore{}, err
	}
	meta, err := strconv.ParseInt(prev[1], 10, 64)
	if err != nil {
		return sqldriver.WaitRestore{}, err
	}
	return sqldriver.WaitRestore{
		Statement:   sqldriver.Statement{SQL: fmt.Sprintf(setLockTimeouts, row, meta)},
		Doing:       fmt.Sprintf("restoring innodb_lock_wait_timeout to %d and lock_wait_timeout to %d", row, meta),
		Consequence: " (the connection keeps the bound)",
	}, nil
}
