package holds

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
)

// maxReplays is how many times a transaction that failed with a retryable
// error is run again before its error is returned.
const maxReplays = 3

// run runs fn in a transaction of its own, or, when db already is a
// transaction, under a savepoint inside it; either way it replays fn on
// retryable errors.
//
// A transaction of its own runs at READ COMMITTED on PostgreSQL and SQL
// Server, whatever the session's default: at PostgreSQL's REPEATABLE READ
// the first statement's snapshot predates the wait for the resource row's
// lock, and the count would miss the hold that the previous lock holder
// committed. MySQL and MariaDB need no such option: there a locking read
// opens no snapshot, so the first plain read (the count) comes after the
// lock; SQLite's writer lock is taken by the first statement.
func run(ctx context.Context, db *gorm.DB, st statements, fn func(tx *gorm.DB) error) error {
	if inTransaction(db) {
		return replay(ctx, maxReplays, func() error { return underSavepoint(db, st, fn) })
	}
	var opts []*sql.TxOptions
	if st.d.Kind == dialects.Postgres || st.d.Kind == dialects.SQLServer {
		opts = append(opts, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	}
	// Begun on the source under dbresolver; inside the transaction every
	// statement stays on its connection.
	return replay(ctx, maxReplays, func() error { return source(db).Transaction(fn, opts...) })
}

// replay calls try, and calls it again, at most replays more times, while
// it fails with an error dialects.IsRetryable recognises. A short random
// pause before each replay lets the transactions that collided finish.
func replay(ctx context.Context, replays int, try func() error) error {
	for i := 0; ; i++ {
		err := try()
		var fe *finalError
		if errors.As(err, &fe) {
			return fe.err
		}
		if err == nil || i >= replays || !dialects.IsRetryable(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (not replayed: %w)", err, ctx.Err())
		}
		t := time.NewTimer(time.Duration(rand.Int64N(int64(time.Duration(i+1) * 2 * time.Millisecond))))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (not replayed: %w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// finalError carries an error that must not be replayed whatever it wraps:
// the caller's transaction can no longer be brought back to the savepoint.
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }

// underSavepoint runs fn inside the caller's transaction tx, between a
// savepoint and its release; when fn fails, everything fn did is rolled back
// to the savepoint and the caller's own work is left as it was.
func underSavepoint(tx *gorm.DB, st statements, fn func(tx *gorm.DB) error) error {
	if err := execDirect(tx, st.savepoint()); err != nil {
		return &finalError{fmt.Errorf("setting a savepoint in the caller's transaction: %w", err)}
	}
	err := fn(tx)
	if err == nil {
		if rel := st.releaseSavepoint(); rel != "" {
			if rerr := execDirect(tx, rel); rerr != nil {
				return &finalError{fmt.Errorf("releasing the savepoint: %w", rerr)}
			}
		}
		return nil
	}
	if rerr := execDirect(tx, st.rollbackTo()); rerr != nil {
		// MySQL and MariaDB end a deadlock victim's whole transaction, and
		// the savepoint with it: only the caller can replay now.
		return &finalError{errors.Join(err, fmt.Errorf("rolling back to the savepoint (the caller's transaction is lost): %w", rerr))}
	}
	return err
}

// execDirect runs a statement that takes no arguments. Savepoint statements
// bypass prepared-statement mode, which MySQL does not allow them in.
func execDirect(tx *gorm.DB, query string) error {
	if p, ok := tx.Statement.ConnPool.(*gorm.PreparedStmtTX); ok {
		_, err := p.Tx.ExecContext(tx.Statement.Context, query)
		return err
	}
	return tx.Exec(query).Error
}
