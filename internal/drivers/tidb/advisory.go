package tidb

import (
	"strings"
	"time"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// TiDB's advisory statements are MySQL's, with its lock calls phrased so that
// they run once, its tries guarded and its waits made of short chunks.
//
// Evaluated once. TiDB's planner folds a function call whose arguments are
// all constants, and a bind parameter is a constant to it; in a prepared
// statement (go-sql-driver's default) it keeps the folded call as a
// deferred expression that the executor evaluates again. So a prepared
// SELECT GET_LOCK(?, ?) takes the name twice (one release leaves it held),
// and a prepared SELECT RELEASE_LOCK(?) releases one hold and answers for a
// second (measured by TestTiDBStatementShapes in tests/advisory). ANY_VALUE
// is never folded, so GET_LOCK(ANY_VALUE(?), ANY_VALUE(?)) is not either,
// and runs once, at execution, however the statement is sent.
//
// Waits. TiDB's GET_LOCK is a pessimistic INSERT into mysql.advisory_locks
// made by an internal session, whose lock wait is GET_LOCK's timeout,
// clamped to 1..3600 s (innodb_lock_wait_timeout's range), and nothing
// interrupts it: KILL QUERY takes effect only when the timeout ends
// (measured: a 3 s wait killed after 0.5 s returned 1317 after 3.07 s),
// and a client that went away is noticed only then. So a wait is made of
// GET_LOCK calls of tidbChunk each (More), and a cancelled or timed-out
// wait leaves the server within tidbChunk. A wait of d waits at least d:
// d rounded up to whole seconds, as on MySQL.
//
// Tries. GET_LOCK(name, 0) waits a second for a held name, so a try
// (WaitAtMost(0)) asks first, in a transaction of its own that it rolls
// back, whether the holder's row in mysql.advisory_locks is locked:
// SELECT ... FOR UPDATE NOWAIT fails at once (3572) when it is, and the
// try answers "busy" without calling GET_LOCK. Only a name taken by
// someone else between that question and the GET_LOCK costs the try a
// second. Where the question cannot be asked (no SELECT privilege on
// mysql.advisory_locks), the try is GET_LOCK(name, 0): exact, but a second
// long on a held name.
//
// Contention. Under many waiters TiDB's GET_LOCK can fail with 1105
// "pessimistic lock retry limit reached" or 1105 "lock wait timeout",
// holding nothing: the statement then answers 0 (busy), and a wait goes on
// while it has time left.

// Advisory is TiDB's advisory family: MySQL's, with the lock calls above.
func (t *Driver) Advisory() sqldriver.Advisory { return advisory{t} }

// advisory is TiDB's family. It does not embed MySQL's (embedding does not
// override): what it shares with MySQL it hands on to MySQL's family of the
// embedded driver explicitly.
type advisory struct{ t *Driver }

func (a advisory) mysql() sqldriver.Advisory { return a.t.Driver.Advisory() }

// tidbChunk is the wait of one GET_LOCK on TiDB, in seconds.
const tidbChunk = 1

// tidbProbe is the try's question, sent with the name as TiDB keys it
// (lower case) between BEGIN PESSIMISTIC and ROLLBACK.
const tidbProbe = "SELECT 1 FROM mysql.advisory_locks WHERE lock_name = ? FOR UPDATE NOWAIT"

// tidbKey is the name as TiDB's GET_LOCK stores it: lower-cased with Go's
// strings.ToLower, which is what TiDB itself calls.
func tidbKey(name string) string { return strings.ToLower(name) }

// Answers: GET_LOCK's, as MySQL's.
func (a advisory) Answers() sqldriver.AdvisoryAnswers { return a.mysql().Answers() }

// CheckName is MySQL's.
func (a advisory) CheckName(name string) error { return a.mysql().CheckName(name) }

// Session is a guarded try, or the connection id and a first wait of at
// most tidbChunk. A GET_LOCK(name, 0) as the first step of a wait would
// wait a second on a held name before the wait proper began, so the first
// step learns only the connection id (for KILL QUERY).
func (advisory) Session(name string, w sqldriver.AdvisoryWait) sqldriver.AdvisorySession {
	release := sqldriver.AdvisoryStatement{SQL: "SELECT RELEASE_LOCK(ANY_VALUE(?))", Args: []any{name}}
	if w.TryOnce() {
		return sqldriver.AdvisorySession{Steps: []sqldriver.AdvisoryStatement{{
			SQL: "SELECT GET_LOCK(ANY_VALUE(?), 0)", Args: []any{name},
			Guard: tidbProbe, GuardArg: tidbKey(name), Held: "SELECT 0",
			GuardBegin: "BEGIN PESSIMISTIC", GuardEnd: "ROLLBACK",
		}}, Release: release}
	}
	return sqldriver.AdvisorySession{Steps: []sqldriver.AdvisoryStatement{
		{SQL: "SELECT 0, CONNECTION_ID()"},
		tidbWait(name, w),
	}, Release: release}
}

// tidbWait waits whole seconds, rounded up, at most tidbChunk; a longer
// wait goes on in More.
func tidbWait(name string, w sqldriver.AdvisoryWait) sqldriver.AdvisoryStatement {
	secs := int64(tidbChunk)
	if !w.Forever {
		secs = w.Ceil(time.Second, tidbChunk)
	}
	return sqldriver.AdvisoryStatement{SQL: "SELECT GET_LOCK(ANY_VALUE(?), ANY_VALUE(?))", Args: []any{name, secs}, Held: "SELECT 0"}
}

// Xact is MySQL's: none.
func (a advisory) Xact(name string, w sqldriver.AdvisoryWait) (sqldriver.AdvisoryStatement, bool) {
	return a.mysql().Xact(name, w)
}

// Clear is MySQL's: the release, repeated.
func (a advisory) Clear(name string, max int) sqldriver.AdvisoryStatement {
	return a.mysql().Clear(name, max)
}

// Kill is MySQL's KILL QUERY, which TiDB obeys only when the GET_LOCK's
// chunk ends.
func (a advisory) Kill(id int64) sqldriver.AdvisoryStatement { return a.mysql().Kill(id) }

// ReleaseHandle is MySQL's: none.
func (a advisory) ReleaseHandle(handle string) sqldriver.AdvisoryStatement {
	return a.mysql().ReleaseHandle(handle)
}

// More is the next chunk of a wait that has left to go.
func (advisory) More(name string, left sqldriver.AdvisoryWait) (sqldriver.AdvisoryStatement, bool) {
	if left.TryOnce() {
		return sqldriver.AdvisoryStatement{}, false
	}
	return tidbWait(name, left), true
}
