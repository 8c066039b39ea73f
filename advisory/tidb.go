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
// TiDB also clamps GET_LOCK's timeout to 1-3600 s, so a try waits up to a
// second and a longer wait is made of waits of at most an hour.

// tidbMaxWait is the longest wait TiDB's GET_LOCK takes, in seconds.
const tidbMaxWait = 3600

func tidbTry(name string) statement {
	return statement{sql: "SET @lockplugin_got = GET_LOCK(?, 0)", args: []any{name}, read: "SELECT @lockplugin_got"}
}

func tidbTryWithID(name string) statement {
	return statement{
		sql:  "SET @lockplugin_got = GET_LOCK(?, 0), @lockplugin_id = CONNECTION_ID()",
		args: []any{name}, read: "SELECT @lockplugin_got, @lockplugin_id",
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
