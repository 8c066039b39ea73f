package mysql

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Advisory phrases advisory locks as GET_LOCK and RELEASE_LOCK (MySQL and
// MariaDB; TiDB overrides it). MySQL has no transaction-scoped named lock.
func (m *Driver) Advisory() sqldriver.Advisory { return Advisory{m} }

// Advisory is MySQL's advisory family, exported so that an engine that
// overrides some of it (TiDB) can hand the rest on to it explicitly.
type Advisory struct{ m *Driver }

// mysqlForever is "wait indefinitely" for GET_LOCK: a year, in seconds.
// A negative timeout means infinite only on some MySQL versions.
const mysqlForever = 365 * 24 * 3600

// mysqlForeverArg is mysqlForever boxed once, for Session.
var mysqlForeverArg any = int64(mysqlForever)

// The constant statement texts that Session shares.
const (
	myTrySQL       = "SELECT GET_LOCK(?, 0)"
	myTryWithIDSQL = "SELECT GET_LOCK(?, 0), CONNECTION_ID()"
	myWaitSQL      = "SELECT GET_LOCK(?, ?)"
	myUnlockSQL    = "SELECT RELEASE_LOCK(?)"
)

// Answers is AnswersGetLock: GET_LOCK's 1, 0 or NULL.
func (Advisory) Answers() sqldriver.AdvisoryAnswers { return sqldriver.AnswersGetLock }

// CheckName refuses a NUL byte: GET_LOCK ends the name there, so
// "job\x00A" and "job\x00B" would be one lock.
func (a Advisory) CheckName(name string) error {
	if i := strings.IndexByte(name, 0); i >= 0 {
		return fmt.Errorf("advisory: lock name has a NUL byte at offset %d; GET_LOCK on %s ends the name there, so names that differ only after it would be one lock; remove the NUL", i, a.m.d)
	}
	return nil
}

// Session asks once without waiting (a try), or asks without waiting and
// learns the connection id (which a cancelled wait needs for KILL QUERY),
// and only then waits whole seconds, rounded up. The name is boxed once,
// shared by the asking step, the wait and the release.
func (Advisory) Session(name string, w sqldriver.AdvisoryWait) sqldriver.AdvisorySession {
	arg := []any{name}
	release := sqldriver.AdvisoryStatement{SQL: myUnlockSQL, Args: arg}
	if w.TryOnce() {
		return sqldriver.AdvisorySession{Steps: []sqldriver.AdvisoryStatement{{SQL: myTrySQL, Args: arg}}, Release: release}
	}
	secs := mysqlForeverArg
	if !w.Forever {
		secs = w.Ceil(time.Second, mysqlForever)
	}
	return sqldriver.AdvisorySession{Steps: []sqldriver.AdvisoryStatement{
		{SQL: myTryWithIDSQL, Args: arg},
		{SQL: myWaitSQL, Args: []any{arg[0], secs}},
	}, Release: release}
}

// Xact is none: MySQL has no transaction-scoped named lock.
func (Advisory) Xact(string, sqldriver.AdvisoryWait) (sqldriver.AdvisoryStatement, bool) {
	return sqldriver.AdvisoryStatement{}, false
}

// Clear is none: clearing repeats the release, which answers 1 for each hold
// of this session it releases (MySQL 5.7+ and MariaDB count them), 0 when
// another session holds the name and NULL when nobody does.
func (Advisory) Clear(string, int) sqldriver.AdvisoryStatement { return sqldriver.AdvisoryStatement{} }

// Kill ends a wait left behind by a cancelled GET_LOCK. The id is the
// server's own integer, never user input.
func (Advisory) Kill(id int64) sqldriver.AdvisoryStatement {
	return sqldriver.AdvisoryStatement{SQL: "KILL QUERY " + strconv.FormatInt(id, 10)}
}

// ReleaseHandle is none: the release is by name.
func (Advisory) ReleaseHandle(string) sqldriver.AdvisoryStatement {
	return sqldriver.AdvisoryStatement{}
}

// More is none: one GET_LOCK waits the whole wait.
func (Advisory) More(string, sqldriver.AdvisoryWait) (sqldriver.AdvisoryStatement, bool) {
	return sqldriver.AdvisoryStatement{}, false
}
