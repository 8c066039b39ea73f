package holds

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
)

// maxReplays is how many times a transaction that failed with a retryable
// error is run again before its error is returned.
const maxReplays = 3

// run runs fn in a transaction of its own on the call's pool, or, when the
// call is inside the caller's transaction, under a savepoint in it; either
// way it replays fn on retryable errors.
//
// A transaction of its own runs at READ COMMITTED on PostgreSQL and SQL
// Server, whatever the session's default: at PostgreSQL's REPEATABLE READ
// the first statement's snapshot predates the wait for the resource row's
// lock, and the count would miss the hold that the previous lock holder
// committed. TiDB too: it takes the read snapshot before the lock is
// granted (175 of 200 oversold in lockcheck at its default REPEATABLE
// READ, 0 at READ COMMITTED). MySQL and MariaDB need no such option: there a locking read
// opens no snapshot, so the first plain read (the count) comes after the
// lock; SQLite's writer lock is taken by the first statement.
func (c *call) run(ctx context.Context, fn func(r runner) error) error {
	if c.callerTx {
		return replay(ctx, maxReplays, func() error { return underSavepoint(ctx, c, fn) })
	}
	var opts *sql.TxOptions
	if c.st.ownReadCommitted() {
		opts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	return replay(ctx, maxReplays, func() error { return c.inTransaction(ctx, opts, fn) })
}

// inTransaction runs fn in a transaction begun on the call's pool, and
// commits it when fn succeeds; on an error or a panic it rolls back.
func (c *call) inTransaction(ctx context.Context, opts *sql.TxOptions, fn func(r runner) error) (err error) {
	q, tx, err := beginTx(ctx, c.pool, opts)
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback()
		}
	}()
	if err = fn(c.runner(q)); err != nil {
		return err
	}
	done = true
	return tx.Commit()
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

// underSavepoint runs fn inside the caller's transaction, between a
// savepoint and its release; when fn fails, everything fn did is rolled back
// to the savepoint and the caller's own work is left as it was. Savepoint
// statements bypass prepared-statement mode, which MySQL does not allow
// them in.
func underSavepoint(ctx context.Context, c *call, fn func(r runner) error) error {
	sp := c.runner(direct(c.pool))
	if _, err := sp.exec(ctx, c.q.savepoint); err != nil {
		return &finalError{fmt.Errorf("setting a savepoint in the caller's transaction: %w", err)}
	}
	err := fn(c.runner(c.pool))
	if err == nil {
		if rel := c.q.releaseSav; rel != "" {
			if _, rerr := sp.exec(ctx, rel); rerr != nil {
				return &finalError{fmt.Errorf("releasing the savepoint: %w", rerr)}
			}
		}
		return nil
	}
	if _, rerr := sp.exec(ctx, c.q.rollbackTo); rerr != nil {
		// MySQL and MariaDB end a deadlock victim's whole transaction, and
		// the savepoint with it: only the caller can replay now.
		return &finalError{errors.Join(err, fmt.Errorf("rolling back to the savepoint (the caller's transaction is lost): %w", rerr))}
	}
	return err
}
