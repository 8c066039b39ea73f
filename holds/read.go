package holds

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// ActiveFor returns holder's active hold on resource, or nil when it has
// none. It takes no lock: the answer is true as of the instant it ran.
func ActiveFor(ctx context.Context, db *gorm.DB, resource Holdable, holder string, opts ...Option) (*Hold, error) {
	if err := checkHolder(holder); err != nil {
		return nil, err
	}
	c, err := start(ctx, db, resource, opts)
	if err != nil {
		return nil, err
	}
	defer c.done()
	res := c.res
	h, err := readHold(c.ctx, c.runner(c.pool), c.st, c.q.activeFor, res.table, res.id, holder)
	if err != nil {
		return nil, fmt.Errorf("holds: reading %q's hold on %s %s on %s: %w", holder, res.table, res.id, c.d, ctxError(c.ctx, err))
	}
	if h != nil {
		h.key = res.key
	}
	return h, nil
}

// Available returns how many more holds resource admits: its HoldCapacity,
// as the resource passed in says, less its active holds, and never below
// zero. It takes no lock: by the time the caller acts on the answer, someone
// may have taken the last slot. To take a slot, call Acquire and handle nil.
func Available(ctx context.Context, db *gorm.DB, resource Holdable, opts ...Option) (int, error) {
	c, err := start(ctx, db, resource, opts)
	if err != nil {
		return 0, err
	}
	defer c.done()
	res := c.res
	var n int64
	if _, err := c.runner(c.pool).row(c.ctx, c.q.countActive, []any{res.table, res.id}, &n); err != nil {
		return 0, fmt.Errorf("holds: counting holds on %s %s on %s: %w", res.table, res.id, c.d, ctxError(c.ctx, err))
	}
	free := int64(resource.HoldCapacity()) - n
	if free < 0 {
		free = 0
	}
	return int(free), nil
}

// IsFull reports whether resource admits no more holds, as of the instant
// it ran; see Available.
func IsFull(ctx context.Context, db *gorm.DB, resource Holdable, opts ...Option) (bool, error) {
	n, err := Available(ctx, db, resource, opts...)
	return err == nil && n == 0, err
}
