package postgres

import (
	"fmt"
	"strconv"
	"time"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// RowLock is the standard clause (FOR UPDATE OF "t" NOWAIT), with a wait
// bounded by lock_timeout.
func (*Driver) RowLock() sqldriver.RowLock { return rowLock{} }

type rowLock struct{ sqldriver.RowLockDefaults }

// WaitSetter is SET LOCAL lock_timeout, through set_config.
func (rowLock) WaitSetter() sqldriver.WaitSetter { return lockTimeout{} }

// The statements around a bounded wait, exact SQL (tests compare it).
//
// set_config(..., true) is SET LOCAL: it ends with the transaction (or the
// savepoint) in any case. OFFSET 0 keeps the subquery a plan node of its
// own, so its row (the value before the change) is produced before the
// outer select list calls set_config.
const (
	setLockTimeout     = "SELECT prev.v, set_config('lock_timeout', $1, true) FROM (SELECT current_setting('lock_timeout') AS v OFFSET 0) AS prev"
	restoreLockTimeout = "SELECT set_config('lock_timeout', $1, true)"
)

// lockTimeout bounds a wait with lock_timeout, in milliseconds: read and
// changed in one round trip, so nothing else runs between the read and the
// change.
type lockTimeout struct{}

func (lockTimeout) Bound(wait time.Duration) sqldriver.WaitBound {
	want := strconv.FormatInt(sqldriver.WaitMillis(wait), 10) + "ms"
	return sqldriver.WaitBound{
		Read:    sqldriver.Statement{SQL: setLockTimeout, Args: []any{want}},
		Columns: 2, Prev: 1,
		ReadDoing: "setting lock_timeout",
		On:        "PostgreSQL",
	}
}

func (lockTimeout) Restore(prev []string) (sqldriver.WaitRestore, error) {
	if len(prev) != 1 {
		return sqldriver.WaitRestore{}, fmt.Errorf("lock_timeout: %d previous values, want 1", len(prev))
	}
	return sqldriver.WaitRestore{
		Statement: sqldriver.Statement{SQL: restoreLockTimeout, Args: []any{prev[0]}},
		Query:     true,
		Doing:     fmt.Sprintf("restoring lock_timeout to %q", prev[0]),
		// The query's error aborted the transaction (or the savepoint the
		// caller rolls back to); the rollback restores the value, and
		// nothing runs before it.
		RolledBack: true,
	}, nil
}
