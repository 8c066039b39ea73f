package sqldriver

import (
	"strconv"
	"time"
)

// WaitStyle says how a database bounds the lock wait of one statement.
type WaitStyle int

const (
	// WaitUnsupported: the database cannot bound one statement's wait
	// exactly; WaitAtMost is refused with ErrUnsupported.
	WaitUnsupported WaitStyle = iota
	// WaitInline: the bound is part of the locking clause (FOR UPDATE WAIT
	// n on Oracle, MariaDB and TiDB), in whole seconds.
	WaitInline
	// WaitSetting: the bound is a session or transaction setting, set by a
	// statement sent before the query and restored by one sent after it
	// (PostgreSQL's lock_timeout and SQL Server's LOCK_TIMEOUT, in
	// milliseconds; MySQL's innodb_lock_wait_timeout and
	// lock_wait_timeout, in seconds).
	WaitSetting
)

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

// InlineWait is the clause keywords that bound a lock's wait ("WAIT 2", in
// whole seconds rounded up) for a database of the given style, "" unless it
// is WaitInline.
func InlineWait(style WaitStyle, wait time.Duration) string {
	if style != WaitInline {
		return ""
	}
	return "WAIT " + strconv.FormatInt(WaitSeconds(wait), 10)
}
