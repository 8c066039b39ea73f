package holds

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Release gives the hold's slot back. Releasing a hold that was already
// released, or that expired, is not an error; a hold that is not in the
// table is (ErrNotFound). On success h.ReleasedAt is set from the database.
//
// A hold returned by Acquire or ActiveFor remembers its holds table; a Table
// option, needed only for a Hold built by hand, overrides it.
func Release(ctx context.Context, db *gorm.DB, h *Hold, opts ...Option) (released error) {
	c, err := holdCall(ctx, db, h, opts)
	if err != nil {
		return err
	}
	defer observeReleased(db, h, &released) // observe.go
	defer c.done()
	ctx, r := c.ctx, c.runner(c.pool)
	var at sql.NullInt64
	if q := c.q.releaseReturning; q != "" {
		// One statement that says when, where the database can.
		found, err := r.row(ctx, q, []any{h.ID}, &at)
		if err != nil {
			return fmt.Errorf("holds: releasing hold %d on %s: %w", h.ID, c.d, ctxError(ctx, err))
		}
		if found {
			h.ReleasedAt = msTime(&at.Int64)
			return nil
		}
	} else if _, err := r.exec(ctx, c.q.release, h.ID); err != nil {
		return fmt.Errorf("holds: releasing hold %d on %s: %w", h.ID, c.d, ctxError(ctx, err))
	}
	// Released before, or not there at all; or (MySQL, MariaDB, SQLite)
	// released just now: the row says which.
	relAt := c.q.relAt
	if c.callerTx {
		relAt = c.q.relAtLatest
	}
	found, err := r.row(ctx, relAt, []any{h.ID}, &at)
	if err != nil {
		return fmt.Errorf("holds: reading hold %d on %s: %w", h.ID, c.d, ctxError(ctx, err))
	}
	if !found {
		return fmt.Errorf("holds: releasing hold %d: %w in %s", h.ID, ErrNotFound, c.st.table)
	}
	if at.Valid {
		h.ReleasedAt = msTime(&at.Int64)
	}
	return nil
}

// Extend moves the expiry of an active hold to ttl from now, by the database
// clock; a ttl of zero removes the expiry. A hold that was released or has
// expired cannot be extended (ErrNotActive): its slot may already be
// someone else's. On success h.ExpiresAt is set from the database. The
// holds table is found as Release finds it.
//
// Extend queues on the resource's row lock, as Acquire does, so that no
// acquirer can count the hold as expired while its extension is still to be
// committed; inside a caller's transaction (under a savepoint, as Acquire)
// that lock lasts until the transaction ends. For a Hold built by hand, the
// resource's primary key column is looked up in the database first.
func Extend(ctx context.Context, db *gorm.DB, h *Hold, ttl time.Duration, opts ...Option) error {
	if ttl < 0 {
		return fmt.Errorf("%w: negative TTL %v", ErrInvalid, ttl)
	}
	c, err := holdCall(ctx, db, h, opts)
	if err != nil {
		return err
	}
	defer c.done()
	ctx, st := c.ctx, c.st
	var got *Hold
	err = c.run(ctx, func(r runner) (err error) {
		got, err = extendOnce(ctx, r, c, h, ttlMillis(ttl))
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotActive) || errors.Is(err, ErrInvalid) {
			return fmt.Errorf("holds: extending hold %d: %w", h.ID, err)
		}
		return fmt.Errorf("holds: extending hold %d on %s: %w", h.ID, st.d, ctxError(ctx, err))
	}
	h.ExpiresAt = got.ExpiresAt
	return nil
}

// extendOnce is one attempt of Extend: read which resource the hold is on,
// lock that resource's row, and move the expiry if the hold is active.
func extendOnce(ctx context.Context, r runner, c *call, h *Hold, ttl int64) (*Hold, error) {
	st, q := c.st, c.q
	byID := q.byID
	if c.callerTx {
		byID = q.byIDLatest // the latest row, not the caller's snapshot (MySQL, MariaDB)
	}
	cur, err := readHold(ctx, r, st, byID, h.ID)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, fmt.Errorf("%w in %s", ErrNotFound, st.table)
	}
	key := h.key
	if key == "" || h.ResourceType != cur.ResourceType {
		if key, err = primaryKey(c.sess, r.q, cur.ResourceType); err != nil {
			return nil, err
		}
	}
	// A resource row that is gone locks nothing, but then no acquirer can
	// take its slot either (Acquire needs the row).
	lock, read := st.lockStatements(cur.ResourceType, key)
	if lock != "" {
		if _, err := r.exec(ctx, lock, cur.ResourceID); err != nil {
			return nil, err
		}
	} else if err := r.rows(ctx, read, []any{cur.ResourceID}, func(*sql.Rows) error { return nil }); err != nil {
		return nil, err
	}
	var n int64
	if ttl > 0 {
		n, err = r.exec(ctx, q.extend, ttl, h.ID)
	} else {
		n, err = r.exec(ctx, q.extendForever, h.ID)
	}
	if err != nil {
		return nil, err
	}
	query := q.byID
	if n == 0 {
		// Either the hold is not active, or (MySQL counts changed rows,
		// not matched ones) its expiry was already what was asked.
		query = q.activeByID
	}
	got, err := readHold(ctx, r, st, query, h.ID)
	if err != nil {
		return nil, err
	}
	if got == nil {
		return nil, ErrNotActive
	}
	return got, nil
}

// primaryKey finds the single primary key column of a resource table, for a
// Hold built by hand, asking the database on q (the transaction Extend
// runs in) through GORM's migrator.
func primaryKey(sess *gorm.DB, q gorm.ConnPool, table string) (string, error) {
	tx := sess.Session(&gorm.Session{NewDB: true})
	tx.Statement.ConnPool = q
	cols, err := tx.Migrator().ColumnTypes(table)
	if err != nil {
		return "", fmt.Errorf("finding the primary key of %s: %w", table, err)
	}
	var keys []string
	for _, c := range cols {
		if pk, ok := c.PrimaryKey(); ok && pk {
			keys = append(keys, c.Name())
		}
	}
	if len(keys) != 1 {
		return "", fmt.Errorf("%w: resource table %s has %d primary key columns, want 1", ErrInvalid, table, len(keys))
	}
	return keys[0], nil
}

// holdCall checks the arguments of a call on one hold and finds its table.
func holdCall(ctx context.Context, db *gorm.DB, h *Hold, opts []Option) (*call, error) {
	if h == nil || h.ID <= 0 {
		return nil, fmt.Errorf("%w: nil hold or hold without an ID", ErrInvalid)
	}
	table := h.table
	if len(opts) > 0 {
		cfg, err := newConfig(opts)
		if err != nil {
			return nil, err
		}
		table = cfg.table
	}
	if table == "" {
		table = DefaultTable
	}
	return begin(ctx, db, table)
}
