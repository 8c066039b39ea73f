package holds

import (
	"context"
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
func Release(ctx context.Context, db *gorm.DB, h *Hold, opts ...Option) error {
	sess, st, ctx, done, err := holdCall(ctx, db, h, opts)
	if err != nil {
		return err
	}
	defer done()
	if err := source(sess).Exec(st.release(), h.ID).Error; err != nil {
		return fmt.Errorf("holds: releasing hold %d on %s: %w", h.ID, st.d, ctxError(ctx, err))
	}
	got, err := readHold(sess, st, st.byID(), h.ID)
	if err != nil {
		return fmt.Errorf("holds: reading hold %d on %s: %w", h.ID, st.d, ctxError(ctx, err))
	}
	if got == nil {
		return fmt.Errorf("holds: releasing hold %d: %w in %s", h.ID, ErrNotFound, st.table)
	}
	h.ReleasedAt = got.ReleasedAt
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
	sess, st, ctx, done, err := holdCall(ctx, db, h, opts)
	if err != nil {
		return err
	}
	defer done()
	var got *Hold
	err = run(ctx, sess, st, func(tx *gorm.DB) (err error) {
		got, err = extendOnce(tx, st, h, ttlMillis(ttl))
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
func extendOnce(tx *gorm.DB, st statements, h *Hold, ttl int64) (*Hold, error) {
	cur, err := readHold(tx, st, st.byID(), h.ID)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, fmt.Errorf("%w in %s", ErrNotFound, st.table)
	}
	key := h.key
	if key == "" || h.ResourceType != cur.ResourceType {
		if key, err = primaryKey(tx, cur.ResourceType); err != nil {
			return nil, err
		}
	}
	// A resource row that is gone locks nothing, but then no acquirer can
	// take its slot either (Acquire needs the row).
	lock, read := st.lockResource(cur.ResourceType, key)
	if lock != "" {
		if err := source(tx).Exec(lock, cur.ResourceID).Error; err != nil {
			return nil, err
		}
	} else {
		rows, err := source(tx).Raw(read, cur.ResourceID).Rows()
		if err != nil {
			return nil, err
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	var r *gorm.DB
	if ttl > 0 {
		r = source(tx).Exec(st.extend(), ttl, h.ID)
	} else {
		r = source(tx).Exec(st.extendForever(), h.ID)
	}
	if r.Error != nil {
		return nil, r.Error
	}
	query := st.byID()
	if r.RowsAffected == 0 {
		// Either the hold is not active, or (MySQL counts changed rows,
		// not matched ones) its expiry was already what was asked.
		query = st.activeByID()
	}
	got, err := readHold(tx, st, query, h.ID)
	if err != nil {
		return nil, err
	}
	if got == nil {
		return nil, ErrNotActive
	}
	return got, nil
}

// primaryKey finds the single primary key column of a resource table, for a
// Hold built by hand.
func primaryKey(tx *gorm.DB, table string) (string, error) {
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
// It returns the session, the statements, the joined context and the
// function that ends it.
func holdCall(ctx context.Context, db *gorm.DB, h *Hold, opts []Option) (*gorm.DB, statements, context.Context, context.CancelFunc, error) {
	if h == nil || h.ID <= 0 {
		return nil, statements{}, nil, nil, fmt.Errorf("%w: nil hold or hold without an ID", ErrInvalid)
	}
	table := h.table
	if len(opts) > 0 {
		cfg, err := newConfig(opts)
		if err != nil {
			return nil, statements{}, nil, nil, err
		}
		table = cfg.table
	}
	if table == "" {
		table = DefaultTable
	}
	sess, d, jctx, done, err := begin(ctx, db)
	if err != nil {
		return nil, statements{}, nil, nil, err
	}
	return sess, newStatements(d, table), jctx, done, nil
}
