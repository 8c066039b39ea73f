package advisory

import (
	"context"
	"errors"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
)

// With runs fn while holding the lock called name, on a connection pinned
// from db's write pool; fn's conn is a *gorm.DB over that very connection,
// with ctx (carrying the held lock) as its context. The lock is released
// when fn returns, returns an error or panics (the panic propagates after
// the release); a release failure is joined to fn's error.
//
// It waits as the options say (indefinitely by default) and until ctx or
// db's own context (db.WithContext) is done, whichever is first; fn's conn
// carries that joined cancellation. When the lock cannot be had, fn does not run and the error matches
// ErrTimeout and lockplugin.ErrBusy (busy), ctx's error (ctx ended the wait), ErrReentrant (this
// call chain holds name already) or ErrUnsupported (SQLite has no advisory
// locks: With refuses rather than run fn unserialised).
//
// db must not be inside a transaction (see WithTx). A COMMIT inside fn does
// not release the lock.
func With(ctx context.Context, db *gorm.DB, name string, fn func(conn *gorm.DB) error, opts ...Option) (err error) {
	if fn == nil {
		return errNilFunc
	}
	l, done, err := acquire(ctx, db, name, opts, false)
	if err != nil {
		return err
	}
	defer done()
	defer func() {
		if rerr := l.Release(ctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	return fn(l.db)
}

// Supported reports whether db's database has session-scoped advisory locks
// (every database lockplugin knows except SQLite).
func Supported(db *gorm.DB) bool {
	return dialects.Of(db).Supports(dialects.AdvisoryLock)
}
