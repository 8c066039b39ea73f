package lockplugin

import (
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/plugin"
)

// ErrUnsupported is matched by errors.Is when the database cannot do what
// was asked (a lock feature, a mechanism). Nothing was sent to the database.
var ErrUnsupported = dialects.ErrUnsupported

// UnsupportedError names the database and the feature it refused.
type UnsupportedError = dialects.UnsupportedError

// ErrLockNotAvailable is matched by errors.Is when NOWAIT met a locked row or
// a lock wait timed out, on any database. The driver's error is still
// reachable with errors.As.
var ErrLockNotAvailable = dialects.ErrLockNotAvailable

// ErrNotRegistered is matched by errors.Is when a lock clause or a versioned
// model is used on a *gorm.DB that does not have the plugin: its checks
// would not have run, so nothing was sent.
var ErrNotRegistered = plugin.ErrNotRegistered
