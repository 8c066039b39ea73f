package lockplugin

import (
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/lockerr"
	"github.com/lockplugin/lockplugin/internal/plugin"
)

// ErrBusy is matched by errors.Is for every answer, from any mechanism on
// any database, that means "someone else holds it": ErrLockNotAvailable
// (a row lock under NOWAIT or a bounded wait), advisory.ErrTimeout,
// lease.ErrNotAcquired, election.ErrNotLeader and holds.ErrFull. Each
// mechanism's own sentinel still matches too; branch on ErrBusy where the
// mechanism does not matter (a 409 Conflict, a job that is already running
// elsewhere). Every mechanism's wait option is WaitAtMost: without it a row
// lock and an advisory lock wait (bounded by the context), a lease fails at
// once; WaitAtMost(0) tries once.
var ErrBusy = lockerr.ErrBusy

// ErrUnsupported is matched by errors.Is when the database cannot do what
// was asked (a lock feature, a mechanism). Nothing was sent to the database.
var ErrUnsupported = dialects.ErrUnsupported

// UnsupportedError names the database and the feature it refused: its
// fields are Dialect (e.g. "SQLite", "MySQL 5.7.44"), Feature (e.g. "SKIP
// LOCKED") and Reason (why, when the answer depends on more than the
// product). errors.Is(err, ErrUnsupported) is true for it.
type UnsupportedError = dialects.UnsupportedError

// LockNotAvailableError is the error behind ErrLockNotAvailable: Dialect
// names the database that refused the row lock, Err is the driver's own
// error (also reached by Unwrap and errors.As). errors.Is matches it
// against ErrLockNotAvailable and ErrBusy.
type LockNotAvailableError = dialects.LockNotAvailableError

// ErrLockNotAvailable is matched by errors.Is when NOWAIT met a locked row or
// a lock wait timed out, on any database. The driver's error is still
// reachable with errors.As. It also matches ErrBusy.
var ErrLockNotAvailable = dialects.ErrLockNotAvailable

// ErrNotRegistered is matched by errors.Is when a lock clause, a versioned
// model or a fenced write is used on a *gorm.DB that does not have the
// plugin: its checks would not have run, so nothing was sent.
var ErrNotRegistered = plugin.ErrNotRegistered
