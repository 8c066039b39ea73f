package advisory

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lockplugin/lockplugin/dialects"
)

// ErrTimeout is matched by errors.Is when the lock is held by another session
// and did not come free within the Timeout (with Timeout(0): at once). It is
// an ordinary answer, not a database fault.
var ErrTimeout = errors.New("advisory: not acquired within the timeout")

// ErrReentrant is matched by errors.Is when a name is locked again while the
// same call chain already holds it on the same database. Advisory locks are
// not re-entrant: waiting would deadlock against the caller's own session.
var ErrReentrant = errors.New("advisory: already held by this call chain (advisory locks are not re-entrant)")

// ErrNotHeld is matched by errors.Is when a release finds the lock not held:
// the Lock was released before, or the session lost it (fn released it by
// hand, or the connection was reset). Work done under the lock may have run
// unprotected.
var ErrNotHeld = errors.New("advisory: not held at release")

// ErrUnsupported is matched by errors.Is when the database has no advisory
// locks (SQLite) or no transaction-scoped ones (MySQL, MariaDB, Oracle).
// Nothing was sent to the database and fn did not run.
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
)

// lockError says which lock on which database failed, and wraps why.
func lockError(d dialects.Dialect, name string, err error) error {
	return &namedError{dialect: d.String(), name: name, err: err}
}

type namedError struct {
	dialect, name string
	err           error
}

func (e *namedError) Error() string {
	return fmt.Sprintf("advisory: lock %s on %s: %s", quoteName(e.name), e.dialect, strings.TrimPrefix(e.err.Error(), "advisory: "))
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
