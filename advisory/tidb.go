package advisory

import (
	"strings"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
)

// TiDB's statements.
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
// GET_LOCK calls of tidbChunk each (waitMore), and a cancelled or timed-out
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

// tidbChunk is the wait of one GET_LOCK on TiDB, in seconds.
const tidbChunk = 1

// tidbProbe is the try's question, sent with the name as TiDB keys it
// (lower case) between BEGIN PESSIMISTIC and ROLLBACK.
const tidbProbe = "SELECT 1 FROM mysql.advisory_locks WHERE lock_name = ? FOR UPDATE NOWAIT"

// tidbKey is the name as TiDB's GET_LOCK stores it: lower-cased with Go's
// strings.ToLower, which is what TiDB itself calls.
func tidbKey(name string) string { return strings.ToLower(name) }

func tidbTry(name string) statement {
	return statement{
		sql: "SELECT GET_LOCK(ANY_VALUE(?), 0)", args: []any{name},
		guard: tidbProbe, guardArg: tidbKey(name), held: "SELECT 0",
	}
}

// tidbID is the first step of a wait: only the connection id (for KILL
// QUERY). A GET_LOCK(name, 0) there would wait a second on a held name
// before the wait proper began; the first wait is the try instead.
func tidbID() statement {
	return statement{sql: "SELECT 0, CONNECTION_ID()"}
}

// tidbWait waits whole seconds, rounded up, at most tidbChunk; a longer
// wait goes on in waitMore.
func tidbWait(name string, w wait) statement {
	secs := int64(tidbChunk)
	if !w.forever {
		secs = w.ceil(time.Second, tidbChunk)
	}
	return statement{sql: "SELECT GET_LOCK(ANY_VALUE(?), ANY_VALUE(?))", args: []any{name, secs}, held: "SELECT 0"}
}

func tidbUnlock(name string) statement {
	return statement{sql: "SELECT RELEASE_LOCK(ANY_VALUE(?))", args: []any{name}}
}

func tidbSession(name string, w wait) session {
	if w.tryOnce() {
		return session{steps: []statement{tidbTry(name)}, release: tidbUnlock(name)}
	}
	return session{steps: []statement{tidbID(), tidbWait(name, w)}, release: tidbUnlock(name)}
}

// waitMore returns the next wait after a GET_LOCK that timed out, when the
// wait was cut short of w (TiDB's waits of tidbChunk): started is when the
// first wait began. ok is false when w has run out.
func waitMore(d dialects.Dialect, name string, w wait, started time.Time) (statement, bool) {
	if d.Engine != dialects.TiDB {
		return statement{}, false
	}
	if w.forever {
		return tidbWait(name, w), true
	}
	left := w.d - time.Since(started)
	if left <= 0 {
		return statement{}, false
	}
	return tidbWait(name, wait{d: left}), true
}
