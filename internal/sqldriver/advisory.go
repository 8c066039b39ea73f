package sqldriver

import "time"

// Advisory phrases package advisory's named locks: session locks, held
// until released or until the session ends, and, where the database has
// them, transaction-scoped ones. Every method is a pure function of the
// name and the wait; package advisory keeps the algorithm (the steps, the
// doubt/clear protocol after a failed statement, the cancellation of a
// wait) and reads the answers as the family's Answers say.
//
// Values always travel as bind parameters, in the database's own
// placeholder syntax, because the statements go straight to a *sql.Conn
// rather than through GORM's builder (which dbresolver would re-route away
// from the pinned connection).
type Advisory interface {
	// Answers is how the database's lock calls answer, which decides how
	// package advisory reads them and clears a doubtful acquisition.
	Answers() AdvisoryAnswers
	// CheckName refuses a name the database would silently alter
	// (truncate it, or cut it at a NUL byte); other names reach the
	// database as they are, and it answers for itself. The empty name is
	// the mechanism's to refuse.
	CheckName(name string) error
	// Session returns the statements of a session-scoped lock of name
	// that waits w.
	Session(name string, w AdvisoryWait) AdvisorySession
	// Xact returns the statement of a transaction-scoped lock of name that
	// waits w; ok is false where the database has none.
	Xact(name string, w AdvisoryWait) (st AdvisoryStatement, ok bool)
	// Clear is the statement that finds out whether the session still
	// holds name after a failed acquisition: on AnswersBool it counts the
	// session's holds (0 or 1; package advisory releases one at a time
	// with the session's release statement); on AnswersAppLock it releases
	// up to max holds and answers the lock mode left ('NoLock' when none).
	// Zero elsewhere: on AnswersGetLock clearing repeats the release,
	// which answers 1 for each hold it releases; on AnswersHandle the
	// state cannot be read back.
	Clear(name string, max int) AdvisoryStatement
	// Kill ends a wait left behind by a cancelled acquisition on the
	// server connection id (AnswersGetLock); zero elsewhere.
	Kill(id int64) AdvisoryStatement
	// ReleaseHandle releases by the handle the acquisition returned
	// (AnswersHandle); zero elsewhere.
	ReleaseHandle(handle string) AdvisoryStatement
	// More is the next wait of an acquisition whose lock call timed out
	// with left of its wait still to go, where the database waits in
	// chunks shorter than asked (TiDB); ok is false where one lock call
	// waits the whole wait.
	More(name string, left AdvisoryWait) (st AdvisoryStatement, ok bool)
}

// AdvisoryAnswers says how a database's advisory lock calls answer.
type AdvisoryAnswers int

const (
	// AnswersBool: the lock call answers true or false when it does not
	// wait, and nothing when it waits (an error if the wait ran out); the
	// release answers true or false (PostgreSQL). A session's first step
	// waits; when it waits forever, a second step waits again with the
	// server's own wait bound off.
	AnswersBool AdvisoryAnswers = iota + 1
	// AnswersGetLock: GET_LOCK answers 1 (acquired), 0 (timed out) or NULL
	// (interrupted), and RELEASE_LOCK 1 for each hold it releases (MySQL,
	// MariaDB, TiDB). A session of two steps asks first without waiting,
	// with the connection id a cancelled wait's Kill needs, then waits.
	AnswersGetLock
	// AnswersAppLock: sp_getapplock's return code, and sp_releaseapplock's
	// (SQL Server).
	AnswersAppLock
	// AnswersHandle: the lock call binds a lock handle and a status code to
	// OUT parameters, and the release is built from the handle
	// (ReleaseHandle) once it is known (Oracle's DBMS_LOCK).
	AnswersHandle
)

// AdvisoryWait is how long an acquisition may wait: indefinitely
// (Forever), not at all (D <= 0), or at most D.
type AdvisoryWait struct {
	Forever bool
	D       time.Duration
}

// TryOnce reports whether the acquisition gives up at once.
func (w AdvisoryWait) TryOnce() bool { return !w.Forever && w.D <= 0 }

// Ceil returns D in whole units, rounded up, at most max.
func (w AdvisoryWait) Ceil(unit time.Duration, max int64) int64 {
	n := int64(w.D / unit)
	if w.D%unit != 0 {
		n++
	}
	if n > max {
		n = max
	}
	return n
}

// AdvisorySession is what one session-scoped lock sends: Steps are tried
// in order until one answers, Release ends the lock (zero on AnswersHandle,
// where ReleaseHandle builds it).
type AdvisorySession struct {
	Steps   []AdvisoryStatement
	Release AdvisoryStatement
}

// AdvisoryStatement is one SQL text with its bind values. An AdvisoryOut
// in Args marks an output parameter that the executor binds to a
// destination.
type AdvisoryStatement struct {
	SQL  string
	Args []any
	// Held, when set, is a constant query that gives the answer "held"
	// (TiDB): when Guard, a locking read of GuardArg sent first between
	// GuardBegin and GuardEnd, finds the row locked (and then SQL is not
	// sent), or when SQL gives up holding nothing.
	Guard, Held          string
	GuardBegin, GuardEnd string
	GuardArg             any
}

// AdvisoryOut marks an OUT bind (Oracle) in a statement's Args.
type AdvisoryOut struct{}
