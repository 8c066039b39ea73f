package version

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockplugin/lockplugin/internal/ctxjoin"
	"github.com/lockplugin/lockplugin/internal/plugin"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
)

// Backoff between attempts of RetryOnConflict: a random wait of up to
// retryBase·2^(n-1) before attempt n+1, at most retryCap.
const (
	retryBase = time.Millisecond
	retryCap  = 50 * time.Millisecond
)

// RetryOnConflict runs fn in a transaction, and runs it again in a new
// transaction when it fails with ErrConcurrency or with a transient
// concurrency error of the database (a deadlock victim, a serialization
// failure, SQLite's BUSY: see dialects.IsRetryable), at most attempts times
// in all. fn must read what it changes through the tx it is given, so that
// each run starts from the current row:
//
//	err := lockplugin.RetryOnConflict(ctx, db, 10, func(tx *gorm.DB) error {
//		var acct Account
//		if err := tx.First(&acct, id).Error; err != nil {
//			return err
//		}
//		acct.Balance += 10
//		return tx.Save(&acct).Error
//	})
//
// Any other error ends it at once and is returned as it is. When every
// attempt conflicted, the last error is returned wrapped (errors.Is still
// matches ErrConcurrency). Between attempts it waits a random time that
// grows with each attempt, up to 50 ms, or until ctx is done.
//
// It stops when either ctx or db's own context (db.WithContext) is done,
// before the next attempt: a context already done runs fn not at all.
//
// db must not be inside a transaction: a retry has to begin a new one to
// see the newer row (under MySQL's REPEATABLE READ a savepoint would read
// the same snapshot again).
func RetryOnConflict(ctx context.Context, db *gorm.DB, attempts int, fn func(tx *gorm.DB) error) error {
	switch {
	case ctx == nil:
		return errors.New("lockplugin: RetryOnConflict: nil context")
	case db == nil || db.Config == nil:
		return errors.New("lockplugin: RetryOnConflict: nil *gorm.DB")
	case fn == nil:
		return errors.New("lockplugin: RetryOnConflict: nil fn")
	case attempts < 1:
		return fmt.Errorf("lockplugin: RetryOnConflict: attempts must be at least 1, got %d", attempts)
	}
	if plugin.InTransaction(db.Statement.ConnPool) {
		return errors.New("lockplugin: RetryOnConflict: db is inside a transaction; pass a *gorm.DB outside it, since each attempt must begin a new transaction to see the newer row")
	}
	// The call ends when ctx or db's own context (db.WithContext) ends.
	// Join cancels the joined context from another goroutine, so an
	// already-done db context is checked here as well: it stops the call
	// before fn ever runs.
	dbctx := db.Statement.Context
	ctx, cancel := ctxjoin.Join(ctx, db)
	defer cancel()
	var err error
	for n := 0; n < attempts; n++ {
		if dbctx != nil && dbctx.Err() != nil {
			cerr := context.Cause(dbctx)
			if err == nil {
				return cerr
			}
			return fmt.Errorf("lockplugin: RetryOnConflict stopped after %d attempts: %w (last error: %v)", n, cerr, err)
		}
		if n > 0 {
			if werr := pause(ctx, n); werr != nil {
				return fmt.Errorf("lockplugin: RetryOnConflict stopped after %d attempts: %w (last error: %v)", n, werr, err)
			}
		}
		if cerr := ctx.Err(); cerr != nil {
			if err == nil {
				return cerr
			}
			return fmt.Errorf("lockplugin: RetryOnConflict stopped after %d attempts: %w (last error: %v)", n, cerr, err)
		}
		err = db.WithContext(ctx).Transaction(fn)
		if err == nil {
			return nil
		}
		if !retryable(err) {
			return err
		}
	}
	return fmt.Errorf("lockplugin: RetryOnConflict gave up after %d attempts: %w", attempts, err)
}

func retryable(err error) bool {
	return errors.Is(err, ErrConcurrency) || dialects.IsRetryable(err)
}

// pause waits before attempt n+1 (n >= 1).
func pause(ctx context.Context, n int) error {
	ceiling := retryCap
	if n < 16 {
		if d := retryBase << (n - 1); d < ceiling {
			ceiling = d
		}
	}
	t := time.NewTimer(rand.N(ceiling) + 1)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
