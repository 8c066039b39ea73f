package dialects

import (
	"fmt"
	"time"
)

// LockWait is the bounded row-lock wait (lockplugin.WaitAtMost): a locking
// read that waits for a locked row at most a given time, then fails with
// ErrLockNotAvailable.
const LockWait Feature = "WaitAtMost"

// MaxLockWait is the longest bound WaitAtMost accepts. PostgreSQL's
// lock_timeout and SQL Server's LOCK_TIMEOUT are 32-bit millisecond
// counts (24.8 days); a day is far beyond any wait worth bounding.
const MaxLockWait = 24 * time.Hour

// WaitStyle says how a database bounds the lock wait of one statement.
type WaitStyle int

const (
	// WaitUnsupported: the database cannot bound one statement's wait
	// exactly; WaitAtMost is refused with ErrUnsupported.
	WaitUnsupported WaitStyle = iota
	// WaitInline: the bound is part of the locking clause (FOR UPDATE WAIT
	// n on Oracle and MariaDB), in whole seconds.
	WaitInline
	// WaitSetting: the bound is a session or transaction setting, set by a
	// statement sent before the query and restored by one sent after it
	// (PostgreSQL's lock_timeout and SQL Server's LOCK_TIMEOUT, in
	// milliseconds; MySQL's innodb_lock_wait_timeout and
	// lock_wait_timeout, in seconds).
	WaitSetting
)

// LockWaitStyle returns how the database bounds a statement's lock wait.
func (d Dialect) LockWaitStyle() WaitStyle {
	if !d.Supports(LockWait) {
		return WaitUnsupported
	}
	if d.Engine == TiDB {
		// TiDB ignores SET_VAR(innodb_lock_wait_timeout = n) (measured: a
		// waiter with SET_VAR(innodb_lock_wait_timeout=1) waited 7.5 s,
		// until the holder let go) and takes FOR UPDATE WAIT n (1205 after
		// 1.02 s for WAIT 1).
		return WaitInline
	}
	switch d.Kind {
	case Oracle, MariaDB:
		return WaitInline
	case Postgres, SQLServer, MySQL:
		return WaitSetting
	}
	return WaitUnsupported
}

// WaitSeconds is wait in whole seconds, rounded up, at least 1: a database
// that counts the bound in seconds must never wait less than asked, and a
// bound of 0 would mean NOWAIT there.
func WaitSeconds(wait time.Duration) int64 {
	s := int64((wait + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// WaitMillis is wait in whole milliseconds, rounded up, at least 1 (0
// means "no bound" to PostgreSQL and "do not wait" to SQL Server).
func WaitMillis(wait time.Duration) int64 {
	ms := int64((wait + time.Millisecond - 1) / time.Millisecond)
	if ms < 1 {
		ms = 1
	}
	return ms
}

// LockWaitSQL returns the clause keywords that bound a lock's wait on a
// WaitInline database ("WAIT 2"), and "" elsewhere.
func (d Dialect) LockWaitSQL(wait time.Duration) string {
	if d.LockWaitStyle() != WaitInline {
		return ""
	}
	return fmt.Sprintf("WAIT %d", WaitSeconds(wait))
}
