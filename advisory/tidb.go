package advisory

import (
	"time"

	"github.com/lockplugin/lockplugin/dialects"
)

// TiDB's statements. TiDB evaluates a prepared one-column SELECT of a
// side-effecting function twice (measured on v8.4.0: a prepared
// SELECT GET_LOCK(?, 0) leaves the name held twice, so one release leaves
// it held; a prepared SELECT RELEASE_LOCK(?) releases and then answers 0
// for the second, empty, release). An assignment is evaluated once, so each
// statement assigns the function's answer to a session variable with SET
// and a second, constant, statement reads it back on the same connection.
// TiDB also clamps GET_LOCK's timeout to 1-3600 s, so a try asks
// IS_FREE_LOCK first (a read, harmless to evaluate twice) and a longer wait is made of waits of at most an hour.
// Under contention TiDB's GET_LOCK can fail with 1105 "pessimistic lock
// retry limit reached" (its locks are rows of an internal table): the wait
// is then cleared and asked again while it has time left.

// tidbMaxWait is the longest wait TiDB's GET_LOCK takes, in seconds.
const tidbMaxWait = 3600

// tidbTry asks IS_FREE_LOCK first, in a statement of its own:
// GET_LOCK(?, 0) waits a second for a held name, and TiDB's IF() does not
// spare its other branch (measured: SET @g = IF(IS_FREE_LOCK(?) = 1,
// GET_LOCK(?, 0), 0) on a held name took 2 s). Only a name taken between
// the two statements costs the try its second.
func tidbTry(name string) statement {
	return statement{
		sql: "SET @lockplugin_got = GET_LOCK(?, 0)", args: []any{name}, read: "SELECT @lockplugin_got",
		guard: "SELECT IS_FREE_LOCK(?)", held: "SELECT 0",
	}
}

func tidbTryWithID(name string) statement {
	return statement{
		sql:  "SET @lockplugin_got = GET_LOCK(?, 0), @lockplugin_id = CONNECTION_ID()",
		args: []any{name}, read: "SELECT @lockplugin_got, @lockplugin_id",
		guard: "SELECT IS_FREE_LOCK(?)", held: "SELECT 0, CONNECTION_ID()",
	}
}

// tidbWait waits whole seconds, rounded up, at most tidbMaxWait; a longer
// wait goes on in waitMore.
func tidbWait(name string, w wait) statement {
	secs := int64(tidbMaxWait)
	if !w.forever {
		secs = w.ceil(time.Second, tidbMaxWait)
	}
	return statement{sql: "SET @lockplugin_got = GET_LOCK(?, ?)", args: []any{name, secs}, read: "SELECT @lockplugin_got"}
}

func tidbUnlock(name string) statement {
	return statement{sql: "SET @lockplugin_got = RELEASE_LOCK(?)", args: []any{name}, read: "SELECT @lockplugin_got"}
}

func tidbSession(name string, w wait) session {
	if w.tryOnce() {
		return session{steps: []statement{tidbTry(name)}, release: tidbUnlock(name)}
	}
	return session{steps: []statement{tidbTryWithID(name), tidbWait(name, w)}, release: tidbUnlock(name)}
}

// waitMore returns the next wait after a GET_LOCK that timed out, when the
// database cut the wait short of w (TiDB's one-hour clamp): started is when
// the first wait began. ok is false when w has run out.
func waitMore(d dialects.Dialect, name string, w wait, started time.Time) (statement, bool) {
	if d.Engine != dialects.TiDB {
		return statement{}, false
	}
	if w.forever {
		return tidbWait(name, w), true
	}
	left := w.d - time.Since(started)
	if left < time.Second/2 {
		return statement{}, false
	}
	return tidbWait(name, wait{d: left}), true
}
