package postgres

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Advisory phrases advisory locks as pg_advisory_lock and its kin, keyed
// by AdvisoryKey(name).
func (p *Driver) Advisory() sqldriver.Advisory { return advisory{p} }

type advisory struct{ p *Driver }

// AdvisoryKey returns the bigint key under which PostgreSQL holds the lock
// called name: the first 8 bytes of the name's SHA-256, big-endian, with
// the sign bit cleared (package advisory documents it as PostgresKey).
func AdvisoryKey(name string) int64 {
	sum := sha256.Sum256([]byte(name))
	return int64(binary.BigEndian.Uint64(sum[:8]) &^ (1 << 63))
}

// Answers: pg_try_advisory_lock and pg_advisory_unlock answer true or false.
func (advisory) Answers() sqldriver.AdvisoryAnswers { return sqldriver.AnswersBool }

// CheckName accepts every name: it is hashed to a key.
func (advisory) CheckName(string) error { return nil }

// The constant statement texts that Session shares.
const (
	pgTryLockSQL   = "SELECT pg_try_advisory_lock($1)"
	pgLockSQL      = "SELECT pg_advisory_lock($1)"
	pgUnlockSQL    = "SELECT pg_advisory_unlock($1)"
	pgTimedLockSQL = "SELECT pg_advisory_lock($1) FROM (SELECT set_config('lock_timeout', $2, true)) AS t"
)

// Session takes a session lock without waiting, or with a bounded wait, or
// forever. One argument list serves the lock and its release: the key is
// boxed once per lock, and the texts are constants (or, for a bounded wait,
// rendered once per wait, pgLockTimeout).
//
// A bounded wait sets lock_timeout with is_local => true in a subquery:
// PostgreSQL evaluates the subquery (which volatile set_config keeps from
// being flattened away) before the outer pg_advisory_lock, and the setting
// ends with the statement's implicit transaction, error or not, so nothing
// needs restoring and the cycle stays at one round trip. An unbounded wait
// sends the plain call; its second step waits with lock_timeout off for the
// statement, for when a server, database or role lock_timeout cut the
// first short.
func (advisory) Session(name string, w sqldriver.AdvisoryWait) sqldriver.AdvisorySession {
	key := []any{AdvisoryKey(name)}
	release := sqldriver.AdvisoryStatement{SQL: pgUnlockSQL, Args: key}
	switch {
	case w.Forever:
		return sqldriver.AdvisorySession{Steps: []sqldriver.AdvisoryStatement{
			{SQL: pgLockSQL, Args: key},
			{SQL: pgTimedLockSQL, Args: []any{key[0], "0"}},
		}, Release: release}
	case w.TryOnce():
		return sqldriver.AdvisorySession{Steps: []sqldriver.AdvisoryStatement{{SQL: pgTryLockSQL, Args: key}}, Release: release}
	}
	return sqldriver.AdvisorySession{Steps: []sqldriver.AdvisoryStatement{
		{SQL: pgTimedLockSQL, Args: []any{key[0], pgLockTimeout(w)}},
	}, Release: release}
}

// Xact takes a transaction lock. Inside the caller's transaction a local
// setting would outlive the statement, so the statement reads the old
// lock_timeout first and puts it back after the lock is granted, each step
// a subquery level of its own so the order is the plan's, not the
// evaluator's. When the wait fails the transaction is aborted, and its
// rollback restores the setting.
func (advisory) Xact(name string, w sqldriver.AdvisoryWait) (sqldriver.AdvisoryStatement, bool) {
	key := AdvisoryKey(name)
	if w.TryOnce() {
		return sqldriver.AdvisoryStatement{SQL: "SELECT pg_try_advisory_xact_lock($1)", Args: []any{key}}, true
	}
	return sqldriver.AdvisoryStatement{
		SQL: "SELECT set_config('lock_timeout', c.old, true) FROM (" +
			"SELECT b.old, pg_advisory_xact_lock($1) FROM (" +
			"SELECT a.old, set_config('lock_timeout', $2, true) FROM (" +
			"SELECT current_setting('lock_timeout') AS old OFFSET 0) AS a) AS b) AS c",
		Args: []any{key, pgLockTimeout(w)},
	}, true
}

// Clear counts the holds this session has of name's key as pg_locks shows
// them: one row per lock however often it is held, so 0 or 1. pg_locks
// splits the key into classid (high 32 bits) and objid (low 32 bits),
// objsubid 1 marking a one-bigint key.
func (advisory) Clear(name string, _ int) sqldriver.AdvisoryStatement {
	key := AdvisoryKey(name)
	return sqldriver.AdvisoryStatement{
		SQL: "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND granted " +
			"AND classid::bigint = $1::bigint AND objid::bigint = $2::bigint AND objsubid = 1",
		Args: []any{key >> 32, key & 0xffffffff},
	}
}

// Kill: a cancelled wait ends with its statement.
func (advisory) Kill(int64) sqldriver.AdvisoryStatement { return sqldriver.AdvisoryStatement{} }

// ReleaseHandle: the release is by key.
func (advisory) ReleaseHandle(string) sqldriver.AdvisoryStatement {
	return sqldriver.AdvisoryStatement{}
}

// More: one lock call waits the whole wait.
func (advisory) More(string, sqldriver.AdvisoryWait) (sqldriver.AdvisoryStatement, bool) {
	return sqldriver.AdvisoryStatement{}, false
}

// pgLockTimeout renders w as a lock_timeout value: "0" (PostgreSQL's
// "wait indefinitely", which also overrides a server-wide lock_timeout) or
// whole milliseconds, rounded up.
func pgLockTimeout(w sqldriver.AdvisoryWait) string {
	if w.Forever {
		return "0"
	}
	ms := w.Ceil(time.Millisecond, math.MaxInt32)
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
