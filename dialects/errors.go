package dialects

import (
	"errors"
	"fmt"

	"github.com/lockplugin/lockplugin/internal/lockerr"
)

// ErrUnsupported is matched by errors.Is for every *UnsupportedError: the
// database cannot do what was asked, and lockplugin refused before sending
// any SQL rather than silently doing less.
var ErrUnsupported = errors.New("lockplugin: not supported by this database")

// UnsupportedError says which database refused which feature.
type UnsupportedError struct {
	// Dialect names the database, e.g. "SQLite" or "MySQL 5.7.44".
	Dialect string
	// Feature names what was asked for, e.g. "SKIP LOCKED" or "advisory lock".
	Feature string
	// Reason adds why, when the answer depends on more than the product.
	Reason string
}

// Error says which feature the database refused, and why when known.
func (e *UnsupportedError) Error() string {
	if e == nil {
		return ErrUnsupported.Error()
	}
	s := fmt.Sprintf("lockplugin: %s is not supported on %s", e.Feature, e.Dialect)
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	return s
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// ErrLockNotAvailable is matched by errors.Is when a database refused a row
// lock that was held by someone else: NOWAIT met a locked row, or a lock
// wait timed out. The driver's own error stays reachable through errors.As.
// Errors matching it also match lockplugin.ErrBusy, the sentinel every
// mechanism's "someone else has it" answer matches.
var ErrLockNotAvailable = lockerr.Busy("lockplugin: lock not available")

// LockNotAvailableError wraps a driver error that IsLockNotAvailable
// recognised.
type LockNotAvailableError struct {
	// Dialect names the database that refused the lock.
	Dialect string
	// Err is the driver's error.
	Err error
}

// Error names the database and includes the driver's message.
func (e *LockNotAvailableError) Error() string {
	if e == nil {
		return ErrLockNotAvailable.Error()
	}
	return fmt.Sprintf("lockplugin: lock not available on %s: %v", e.Dialect, e.Err)
}

// Is makes errors.Is(err, ErrLockNotAvailable) and errors.Is(err,
// lockplugin.ErrBusy) true.
func (e *LockNotAvailableError) Is(target error) bool {
	return target == ErrLockNotAvailable || target == lockerr.ErrBusy
}

// Unwrap returns the driver's error.
func (e *LockNotAvailableError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// WrapLockNotAvailable returns err wrapped in a *LockNotAvailableError when
// it is a lock-not-available error of the database, and err unchanged
// otherwise (including nil).
func (d Dialect) WrapLockNotAvailable(err error) error {
	if err == nil || errors.Is(err, ErrLockNotAvailable) || !IsLockNotAvailable(err) {
		return err
	}
	return &LockNotAvailableError{Dialect: d.String(), Err: err}
}
