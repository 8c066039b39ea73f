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

// UnsupportedError names the database and the feature it refused.
type UnsupportedError = dialects.UnsupportedError

// ErrLockNotAvailable is matched by errors.Is when NOWAIT met a locked row or
// a lock wait timed out, on any database. The driver's error is still
// reachable with errors.As. It also matches ErrBusy.
var ErrLockNotAvailable = dialects.ErrLockNotAvailable

// ErrNotRegistered is matched by errors.Is when a lock clause or a versioned
// model is used on a *gorm.DB that does not have the plugin: its checks
// would not have run, so nothing was sent.
var ErrNotRegistered = plugin.ErrNotRegistered
