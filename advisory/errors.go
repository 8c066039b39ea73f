package advisory

import (
	"errors"
	"strconv"
	"sync"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/migrator"
	"gorm.io/gorm/schema"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/lockerr"
)

// ErrTimeout is matched by errors.Is when the lock is held by another session
// and did not come free within WaitAtMost's bound (with WaitAtMost(0): at
// once). It is an ordinary answer, not a database fault. Errors matching it
// also match lockplugin.ErrBusy, the sentinel every mechanism's "someone
// else has it" answer matches.
var ErrTimeout = lockerr.Busy("advisory: not acquired within the wait")

// ErrReentrant is matched by errors.Is when a name is locked again while the
// same call chain already holds it on the same database. Advisory locks are
// not re-entrant: waiting would deadlock against the caller's own session.
var ErrReentrant = errors.New("advisory: already held by this call chain (advisory locks are not re-entrant)")

// ErrNotHeld is matched by errors.Is when a release finds the lock not held:
// the session lost it (fn released it by hand, or the connection was
// reset). Work done under the lock may have run unprotected. Releasing a
// Lock this handle released before is not an error (nil).
var ErrNotHeld = errors.New("advisory: not held at release")

// ErrUnsupported is matched by errors.Is when the database has no advisory
// locks (SQLite) or no transaction-scoped ones (MySQL, MariaDB, Oracle).
// Nothing was sent to the database and fn did not run.
//
// Deprecated: use lockplugin.ErrUnsupported, the sentinel's one home; this
// is the same value.
var ErrUnsupported = dialects.ErrUnsupported

// Invalid arguments, reported before anything touches the database.
var (
	errNilDB            = errors.New("advisory: nil *gorm.DB")
	errNilContext       = errors.New("advisory: nil context")
	errEmptyName        = errors.New("advisory: empty lock name")
	errNilFunc          = errors.New("advisory: nil function")
	errDryRun           = errors.New("advisory: a DryRun session cannot hold a lock")
	errInTransaction    = errors.New("advisory: db is inside a transaction; a session lock pins its own connection, so pass the *gorm.DB the transaction was started from, or use WithTx for a transaction-scoped lock")
	errNotInTransaction = errors.New("advisory: WithTx needs a *gorm.DB inside a transaction (db.Transaction or db.Begin)")
	errZeroLock         = errors.New("advisory: Lock was not returned by Acquire (zero value or nil); take one with advisory.Acquire")
)

// zeroLockDB is the DB of a Lock not made by Acquire: every statement run
// on it fails with errZeroLock, and none reaches a database (its dialector
// has no connection and registers no callbacks).
var zeroLockDB = sync.OnceValue(func() *gorm.DB {
	db, err := gorm.Open(noDatabase{}, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		db = &gorm.DB{Config: &gorm.Config{}}
	}
	db.Error = errZeroLock
	return db
})

// noDatabase is a gorm.Dialector with no database behind it.
type noDatabase struct{}

func (noDatabase) Name() string                    { return "none" }
func (noDatabase) Initialize(*gorm.DB) error       { return nil }
func (noDatabase) DataTypeOf(*schema.Field) string { return "" }
func (noDatabase) DefaultValueOf(*schema.Field) clause.Expression {
	return clause.Expr{SQL: "DEFAULT"}
}
func (noDatabase) BindVarTo(w clause.Writer, _ *gorm.Statement, _ any) { _ = w.WriteByte('?') }
func (noDatabase) QuoteTo(w clause.Writer, s string)                   { _, _ = w.WriteString(s) }
func (noDatabase) Explain(sql string, _ ...any) string                 { return sql }
func (d noDatabase) Migrator(db *gorm.DB) gorm.Migrator {
	return migrator.Migrator{Config: migrator.Config{DB: db, Dialector: d}}
}

// lockError says which lock on which database failed, and wraps why.
func lockError(d dialects.Dialect, name string, err error) error {
	return &namedError{dialect: d.String(), name: name, err: err}
}

// answerError is one of this package's sentinels with what the database
// said: ErrTimeout with the driver's 55P03, ErrNotHeld with a return code.
// Its message is the sentinel's followed by detail, so that namedError can
// put the lock's name in between without cutting anything off a message.
type answerError struct {
	sentinel error
	detail   string // " (...)" or ": ..."
}

func answer(sentinel error, detail string) error {
	return &answerError{sentinel: sentinel, detail: detail}
}

func (e *answerError) Error() string { return e.sentinel.Error() + e.detail }

func (e *answerError) Unwrap() error { return e.sentinel }

// ownSentinel reports whether err is one of this package's sentinels as it
// is, with no detail.
func ownSentinel(err error) bool {
	return err == ErrTimeout || err == ErrNotHeld || err == ErrReentrant
}

type namedError struct {
	dialect, name string
	err           error
}

// Error composes the message from its parts: this package's own answers
// read "advisory: <answer>: lock "name" on <database><detail>", anything
// else "advisory: lock "name" on <database>: <error>".
func (e *namedError) Error() string {
	where := "lock " + quoteName(e.name) + " on " + e.dialect
	if a, ok := e.err.(*answerError); ok {
		return a.sentinel.Error() + ": " + where + a.detail
	}
	if ownSentinel(e.err) {
		return e.err.Error() + ": " + where
	}
	return "advisory: " + where + ": " + e.err.Error()
}

// maxQuotedName is how much of a name an error message quotes.
const maxQuotedName = 64

// quoteName quotes name for an error message, cut to its first
// maxQuotedName bytes (and its length) when longer: a 1 MiB name must not
// make a 1 MB error.
func quoteName(name string) string {
	if len(name) <= maxQuotedName {
		return strconv.Quote(name)
	}
	cut := name[:maxQuotedName]
	for !utf8.ValidString(cut) && len(cut) > maxQuotedName-utf8.UTFMax {
		cut = cut[:len(cut)-1]
	}
	return strconv.Quote(cut) + "...(" + strconv.Itoa(len(name)) + " bytes)"
}

func (e *namedError) Unwrap() error { return e.err }
