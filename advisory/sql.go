package advisory

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"github.com/lockplugin/lockplugin/dialects"
)

// This file holds every statement the package sends, as pure functions of
// the database, the name and the wait, so that a unit test pins the exact
// SQL of each database without a server. Values always travel as bind
// parameters, in each driver's own placeholder syntax, because the
// statements go straight to a *sql.Conn rather than through GORM's builder
// (which dbresolver would re-route away from the pinned connection).

// statement is one SQL text with its bind values. An outParam in args marks
// an output parameter that the executor binds to a destination.
type statement struct {
	sql  string
	args []any
	// held, when set, is a constant query that gives the answer "held"
	// (TiDB, see tidb.go): when guard, a locking read of guardArg sent
	// first between BEGIN PESSIMISTIC and ROLLBACK, finds the row locked
	// (and then sql is not sent), or when sql gives up with TiDB's 1105.
	guard, held string
	guardArg    any
}

// outParam marks an Oracle OUT bind in a statement's args.
type outParam struct{}

// Limits on what each database accepts.
const (
	// mysqlForever is "wait indefinitely" for GET_LOCK: a year, in seconds.
	// A negative timeout means infinite only on some MySQL versions.
	mysqlForever = 365 * 24 * 3600
	// oracleMaxWait is DBMS_LOCK.MAXWAIT, which REQUEST reads as "forever";
	// finite waits stay below it.
	oracleMaxWait = 32767
	// sqlServerMaxName is sp_getapplock's @Resource length (nvarchar(255)),
	// which silently truncates longer values.
	sqlServerMaxName = 255
	// oracleMaxName is ALLOCATE_UNIQUE's lockname length, in bytes.
	oracleMaxName = 128
)

// session is what one session-scoped lock sends: steps are tried in order
// until one answers (MySQL asks once without waiting and learns its
// connection id, and only then waits; PostgreSQL waits again with
// lock_timeout off if a configured one ran out), release ends the lock. Oracle's
// release takes the lock handle that acquisition returns, so it is built
// later by oracleRelease.
type session struct {
	steps   []statement
	release statement
}

// checkName refuses names a database would silently alter: truncate (SQL
// Server, Oracle) or cut at a NUL byte (MySQL and MariaDB, where
// "job\x00A" and "job\x00B" would be one lock). Other names reach the
// database as they are, and it answers for itself.
func checkName(d dialects.Dialect, name string) error {
	if name == "" {
		return errEmptyName
	}
	switch d.Kind {
	case dialects.MySQL, dialects.MariaDB:
		if i := strings.IndexByte(name, 0); i >= 0 {
			return fmt.Errorf("advisory: lock name has a NUL byte at offset %d; GET_LOCK on %s ends the name there, so names that differ only after it would be one lock; remove the NUL", i, d)
		}
	case dialects.SQLServer:
		if n := len(utf16.Encode([]rune(name))); n > sqlServerMaxName {
			return fmt.Errorf("advisory: lock name is %d characters; sp_getapplock on %s takes at most %d and would truncate it", n, d, sqlServerMaxName)
		}
	case dialects.Oracle:
		if n := len(name); n > oracleMaxName {
			return fmt.Errorf("advisory: lock name is %d bytes; DBMS_LOCK on %s takes at most %d", n, d, oracleMaxName)
		}
	}
	return nil
}

// sessionPlan returns the statements of a session-scoped lock.
func sessionPlan(d dialects.Dialect, name string, w wait) (session, error) {
	switch d.Kind {
	case dialects.Postgres:
		// One argument list for the lock and its release: the key is
		// boxed once per lock, and the texts are constants (or, for a
		// bounded wait, rendered once per wait, pgLockTimeout).
		key := []any{PostgresKey(name)}
		if w.forever {
			return session{steps: []statement{{sql: pgLockSQL, args: key}, pgOverride(key[0])}, release: statement{sql: pgUnlockSQL, args: key}}, nil
		}
		return session{steps: []statement{pgLockArgs(key, w)}, release: statement{sql: pgUnlockSQL, args: key}}, nil
	case dialects.MySQL, dialects.MariaDB:
		if d.Engine == dialects.TiDB {
			return tidbSession(name, w), nil
		}
		arg := []any{name} // shared by the asking step and the release
		release := statement{sql: myUnlockSQL, args: arg}
		if w.tryOnce() {
			return session{steps: []statement{{sql: myTrySQL, args: arg}}, release: release}, nil
		}
		return session{steps: []statement{{sql: myTryWithIDSQL, args: arg}, myWaitArg(arg[0], w)}, release: release}, nil
	case dialects.SQLServer:
		return session{steps: []statement{msLock(name, w, "Session")}, release: msUnlock(name)}, nil
	case dialects.Oracle:
		return session{steps: []statement{oracleLock(name, w)}}, nil
	}
	return session{}, d.Require(dialects.AdvisoryLock)
}

// xactPlan returns the statement of a transaction-scoped lock.
func xactPlan(d dialects.Dialect, name string, w wait) (statement, error) {
	switch d.Kind {
	case dialects.Postgres:
		return pgXactLock(PostgresKey(name), w), nil
	case dialects.SQLServer:
		return msLock(name, w, "Transaction"), nil
	}
	return statement{}, d.Require(dialects.AdvisoryXactLock)
}

// pgLockTimeout renders w as a lock_timeout value: "0" (PostgreSQL's
// "wait indefinitely", which also overrides a server-wide lock_timeout) or
// whole milliseconds, rounded up.
func pgLockTimeout(w wait) string {
	if w.forever {
		return "0"
	}
	ms := w.ceil(time.Millisecond, math.MaxInt32)
	if v, ok := pgTimeouts.Load(ms); ok {
		return v.(string)
	}
	s := strconv.FormatInt(ms, 10) + "ms"
	if n := pgTimeoutCount.Add(1); n <= maxPGTimeouts {
		pgTimeouts.Store(ms, s)
	}
	return s
}

// pgTimeouts keeps pgLockTimeout's renderings, so that an application's
// few wait options are rendered once, not per call; at most maxPGTimeouts
// of them, so that waits computed per call cannot grow it without end.
var (
	pgTimeouts     sync.Map // int64 milliseconds -> string
	pgTimeoutCount atomic.Int64
)

const maxPGTimeouts = 64

// The constant statement texts that sessionPlan shares.
const (
	pgTryLockSQL   = "SELECT pg_try_advisory_lock($1)"
	pgLockSQL      = "SELECT pg_advisory_lock($1)"
	pgUnlockSQL    = "SELECT pg_advisory_unlock($1)"
	pgTimedLockSQL = "SELECT pg_advisory_lock($1) FROM (SELECT set_config('lock_timeout', $2, true)) AS t"
	myTrySQL       = "SELECT GET_LOCK(?, 0)"
	myTryWithIDSQL = "SELECT GET_LOCK(?, 0), CONNECTION_ID()"
	myWaitSQL      = "SELECT GET_LOCK(?, ?)"
	myUnlockSQL    = "SELECT RELEASE_LOCK(?)"
)

// mysqlForeverArg is mysqlForever boxed once, for myWaitArg.
var mysqlForeverArg any = int64(mysqlForever)

// pgLockArgs takes a session lock without waiting, or with a bounded wait;
// key holds only the key, and is shared with the release. A bounded wait
// sets lock_timeout with is_local => true in a subquery: PostgreSQL
// evaluates the subquery (which volatile set_config keeps from being
// flattened away) before the outer pg_advisory_lock, and the setting ends
// with the statement's implicit transaction, error or not, so nothing needs
// restoring and the cycle stays at one round trip. An unbounded wait sends
// the plain call (sessionPlan); pgOverride is its second attempt when a
// server, database or role lock_timeout cut it short.
func pgLockArgs(key []any, w wait) statement {
	if w.tryOnce() {
		return statement{sql: pgTryLockSQL, args: key}
	}
	return statement{sql: pgTimedLockSQL, args: []any{key[0], pgLockTimeout(w)}}
}

// myWaitArg waits whole seconds, rounded up; name is the lock name,
// boxed. (The asking step, GET_LOCK(?, 0) with CONNECTION_ID(), returns
// the connection id that a cancelled wait needs for KILL QUERY.)
func myWaitArg(name any, w wait) statement {
	if w.forever {
		return statement{sql: myWaitSQL, args: []any{name, mysqlForeverArg}}
	}
	return statement{sql: myWaitSQL, args: []any{name, w.ceil(time.Second, mysqlForever)}}
}

// pgOverride waits with lock_timeout off for the statement; key is the
// key, boxed.
func pgOverride(key any) statement { return pgTimedLock(key, "0") }

func pgTimedLock(key any, timeout string) statement {
	return statement{sql: pgTimedLockSQL, args: []any{key, timeout}}
}

// pgHolds counts the holds this session has of key as pg_locks shows them:
// one row per lock however often it is held, so 0 or 1. pg_locks splits
// the key into classid (high 32 bits) and objid (low 32 bits), objsubid 1
// marking a one-bigint key.
func pgHolds(key int64) statement {
	return statement{
		sql: "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND granted " +
			"AND classid::bigint = $1::bigint AND objid::bigint = $2::bigint AND objsubid = 1",
		args: []any{key >> 32, key & 0xffffffff},
	}
}

// pgXactLock takes a transaction lock. Inside the caller's transaction a
// local setting would outlive the statement, so the statement reads the old
// lock_timeout first and puts it back after the lock is granted, each step a
// subquery level of its own so the order is the plan's, not the evaluator's.
// When the wait fails the transaction is aborted, and its rollback restores
// the setting.
func pgXactLock(key int64, w wait) statement {
	if w.tryOnce() {
		return statement{sql: "SELECT pg_try_advisory_xact_lock($1)", args: []any{key}}
	}
	return statement{
		sql: "SELECT set_config('lock_timeout', c.old, true) FROM (" +
			"SELECT b.old, pg_advisory_xact_lock($1) FROM (" +
			"SELECT a.old, set_config('lock_timeout', $2, true) FROM (" +
			"SELECT current_setting('lock_timeout') AS old OFFSET 0) AS a) AS b) AS c",
		args: []any{key, pgLockTimeout(w)},
	}
}

// myKill ends a wait left behind by a cancelled GET_LOCK. The id is the
// server's own integer, never user input.
func myKill(id int64) statement {
	return statement{sql: "KILL QUERY " + strconv.FormatInt(id, 10)}
}

// msLock calls sp_getapplock; owner is 'Session' or 'Transaction'. The
// timeout is in milliseconds, -1 waiting indefinitely.
func msLock(name string, w wait, owner string) statement {
	ms := int64(-1)
	if !w.forever {
		ms = w.ceil(time.Millisecond, math.MaxInt32)
	}
	return statement{
		sql: "DECLARE @result int; EXEC @result = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', " +
			"@LockOwner = '" + owner + "', @LockTimeout = @p2; SELECT @result",
		args: []any{name, ms},
	}
}

func msUnlock(name string) statement {
	return statement{
		sql:  "DECLARE @result int; EXEC @result = sp_releaseapplock @Resource = @p1, @LockOwner = 'Session'; SELECT @result",
		args: []any{name},
	}
}

// msClear releases every hold this session has of the name, at most max of
// them, and answers APPLOCK_MODE afterwards: 'NoLock' when none is left.
func msClear(name string, max int) statement {
	return statement{
		sql: "DECLARE @n int = 0; " +
			"WHILE APPLOCK_MODE('public', @p1, 'Session') <> 'NoLock' AND @n < @p2 " +
			"BEGIN EXEC sp_releaseapplock @Resource = @p1, @LockOwner = 'Session'; SET @n = @n + 1; END; " +
			"SELECT APPLOCK_MODE('public', @p1, 'Session')",
		args: []any{name, int64(max)},
	}
}

// oracleLock allocates the name's handle and requests it exclusively,
// surviving COMMIT. Oracle binds by position in order of appearance, so the
// placeholders appear in the order of args: name, handle (out), status
// (out), timeout in seconds.
func oracleLock(name string, w wait) statement {
	secs := int64(oracleMaxWait)
	if !w.forever {
		secs = w.ceil(time.Second, oracleMaxWait-1)
	}
	return statement{
		sql: "DECLARE handle VARCHAR2(128); BEGIN " +
			"DBMS_LOCK.ALLOCATE_UNIQUE(lockname => :1, lockhandle => handle); :2 := handle; " +
			":3 := DBMS_LOCK.REQUEST(lockhandle => handle, lockmode => DBMS_LOCK.X_MODE, timeout => :4, release_on_commit => FALSE); END;",
		args: []any{name, outParam{}, outParam{}, secs},
	}
}

// oracleRelease releases by the handle acquisition returned, so releasing
// does not call ALLOCATE_UNIQUE again (which commits).
func oracleRelease(handle string) statement {
	return statement{
		sql:  "BEGIN :1 := DBMS_LOCK.RELEASE(lockhandle => :2); END;",
		args: []any{outParam{}, handle},
	}
}
