package lockplugin

import (
	"context"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/internal/version"
)

// RetryOnConflict runs fn in a transaction, and runs it again in a new
// transaction when it fails with ErrConcurrency or with a transient
// concurrency error of the database (a deadlock victim, a serialization
// failure, SQLite's BUSY: see dialects.IsRetryable), at most attempts times
// in all. fn must read what it changes through the tx it is given, so that
// each run starts from the current row:
//
//	err := lockplugin.RetryOnConflict(ctx, db, 10, func(tx *gorm.DB) error {
//		var o Order
//		if err := tx.First(&o, orderID).Error; err != nil {
//			return err
//		}
//		o.Total += 250
//		return tx.Save(&o).Error
//	})
//
// Any other error ends it at once and is returned as it is. When every
// attempt conflicted, the last error is returned wrapped (errors.Is still
// matches ErrConcurrency). Between attempts it waits a random time that
// grows with each attempt, up to 50 ms, or until ctx is done. It stops when
// either ctx or db's own context (db.WithContext) is done, before the next
// attempt: a context already done runs fn not at all. A nil ctx, db or fn,
// or attempts < 1, is an error before fn runs.
//
// db must not be inside a transaction (that too is an error before fn
// runs): a retry has to begin a new one to see the newer row (under
// MySQL's REPEATABLE READ a savepoint would read the same snapshot again).
// With an Observer (WithObserver), each new attempt is reported as
// observe.Retried.
func RetryOnConflict(ctx context.Context, db *gorm.DB, attempts int, fn func(tx *gorm.DB) error) error {
	if o := plugin.Observer(db); o != nil && fn != nil {
		fn = observeRetries(o, db, fn) // observe.go
	}
	return version.RetryOnConflict(ctx, db, attempts, fn)
}
