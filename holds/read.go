package holds

import (
	"context"
	"database/sql"
	"fmt"

	"gorm.io/gorm"
)

// ActiveFor returns holder's active hold on resource, or nil when it has
// none. It takes no lock: the answer is true as of the instant it ran. The
// Hold returned remembers db and its holds table, as one from Acquire does.
func ActiveFor(ctx context.Context, db *gorm.DB, resource Holdable, holder string, opts ...Option) (*Hold, error) {
	if err := checkHolder(holder); err != nil {
		return nil, err
	}
	c, err := start(ctx, db, resource, opts)
	if err != nil {
		return nil, err
	}
	defer c.done()
	res, r := c.res, c.runner(c.pool)
	if err := c.sweep(db, r); err != nil {
		return nil, fmt.Errorf("holds: reading %q's hold on %s %s on %s: %w", holder, res.table, res.id, c.d, ctxError(c.ctx, err))
	}
	h, err := readHold(c.ctx, r, c.st, c.q.activeFor, res.table, res.id, holder)
	if err != nil {
		return nil, fmt.Errorf("holds: reading %q's hold on %s %s on %s: %w", holder, res.table, res.id, c.d, ctxError(c.ctx, err))
	}
	if h != nil {
		h.key, h.db = res.key, db
	}
	return h, nil
}

// Available returns how many more holds resource admits: the capacity its
// row says (HoldCapacity of the row as stored, read exactly as Acquire
// reads it, so the two never disagree about the capacity), less its active
// holds, and never below zero. The fields of the resource passed in serve
// only to find the row. It takes no lock: by the time the caller acts on
// the answer, someone may have taken the last slot. To take a slot, call
// Acquire and handle ErrFull. The resource's row must exist (ErrNotFound).
func Available(ctx context.Context, db *gorm.DB, resource Holdable, opts ...Option) (int, error) {
	c, err := start(ctx, db, resource, opts)
	if err != nil {
		return 0, err
	}
	defer c.done()
	res, r := c.res, c.runner(c.pool)
	capacity, err := readCapacity(c.ctx, r, c.st, res)
	if err != nil {
		return 0, fmt.Errorf("holds: reading %s %s on %s: %w", res.table, res.id, c.d, ctxError(c.ctx, err))
	}
	if err := c.sweep(db, r); err != nil {
		return 0, fmt.Errorf("holds: counting holds on %s %s on %s: %w", res.table, res.id, c.d, ctxError(c.ctx, err))
	}
	var n int64
	if _, err := r.row(c.ctx, c.q.countActive, []any{res.table, res.id}, &n); err != nil {
		return 0, fmt.Errorf("holds: counting holds on %s %s on %s: %w", res.table, res.id, c.d, ctxError(c.ctx, err))
	}
	free := int64(capacity) - n
	if free < 0 {
		free = 0
	}
	return int(free), nil
}

// IsFull reports whether resource admits no more holds, as of the instant
// it ran: Available is zero. See Available.
func IsFull(ctx context.Context, db *gorm.DB, resource Holdable, opts ...Option) (bool, error) {
	n, err := Available(ctx, db, resource, opts...)
	return err == nil && n == 0, err
}

// readCapacity reads the resource's row without a lock and returns its
// capacity as HoldCapacity says of the row as stored: what lockResource
// returns under the lock.
func readCapacity(ctx context.Context, r runner, st statements, res resource) (int, error) {
	var row Holdable
	err := r.rows(ctx, st.readStatement(res.table, res.key), []any{res.pk}, func(rows *sql.Rows) (err error) {
		row, err = res.scan(ctx, rows)
		return err
	})
	if err != nil {
		return 0, err
	}
	if row == nil {
		return 0, fmt.Errorf("%w: no row %s = %s in %s", ErrNotFound, res.key, res.id, res.table)
	}
	return row.HoldCapacity(), nil
}

// sweep reports the resource's expired, never-released holds to db's
// Observer (sweepExpired), when one is set; without one it sends nothing.
func (c *call) sweep(db *gorm.DB, r runner) error {
	if !c.observed {
		return nil
	}
	evs, err := sweepExpired(c.ctx, r, c)
	if err != nil {
		return err
	}
	report(db, evs)
	return nil
}
