package lockplugin

import (
	"context"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/internal/plugin"

	"github.com/lockplugin/lockplugin/internal/version"
)

// RetryOnConflict runs fn in a transaction and runs it again, in a new
// transaction, when it fails with ErrConcurrency or with the database's
// transient concurrency errors (deadlock victim, serialization failure,
// SQLite BUSY), at most attempts times in all; any other error returns at
// once. fn must re-read what it changes through tx. db must not be inside a
// transaction. See version.RetryOnConflict. With an Observer
// (WithObserver), each new attempt is reported as observe.Retried.
func RetryOnConflict(ctx context.Context, db *gorm.DB, attempts int, fn func(tx *gorm.DB) error) error {
	if o := plugin.Observer(db); o != nil && fn != nil {
		fn = observeRetries(o, db, fn) // observe.go
	}
	return version.RetryOnConflict(ctx, db, attempts, fn)
}
