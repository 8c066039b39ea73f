package holds

import (
	"context"
	"database/sql"
	"fmt"

	"gorm.io/gorm"
)

// ForceRelease ends, by an operator's decision, the active holds of one
// resource: the resource whose table is resourceType and whose primary key,
// as stored in the holds table, is resourceID (the "table/id" that `lockcheck
// who` and the Observer's events name), and of holder only when holder is
// not "". It returns how many holds it ended.
//
// Their slots are free at once: the next Acquire may grant them. The
// holders are not told, and cannot be: each finds out at its next Release
// or Extend, which return an error matching ErrLost (Extend: also
// ErrNotActive), never a silent success, so that a holder that was paused
// or cut off learns it worked without its slot. Capacity is never exceeded
// by a force-release: it only ever frees slots, and a stale holder can
// neither extend nor revive a hold that was ended.
//
// It needs no lock on the resource's row (the resource need not even
// exist), and takes the Table option as every call does.
func ForceRelease(ctx context.Context, db *gorm.DB, resourceType, resourceID, holder string, opts ...Option) (int, error) {
	switch {
	case resourceType == "" || len(resourceType) > maxKeyLen:
		return 0, fmt.Errorf("%w: holds.ForceRelease: resource type (its table) %q: want 1 to %d bytes", ErrInvalid, resourceType, maxKeyLen)
	case resourceID == "" || len(resourceID) > maxKeyLen:
		return 0, fmt.Errorf("%w: holds.ForceRelease: resource id %q: want 1 to %d bytes", ErrInvalid, resourceID, maxKeyLen)
	}
	if holder != "" {
		if err := checkHolder(holder); err != nil {
			return 0, fmt.Errorf("holds.ForceRelease: %w", err)
		}
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return 0, err
	}
	c, err := begin(ctx, db, cfg.table)
	if err != nil {
		return 0, err
	}
	defer c.done()
	q, args := c.q.forceRelease, []any{resourceType, resourceID}
	if holder != "" {
		q, args = c.q.forceReleaseHolder, append(args, holder)
	}
	r := c.runner(c.pool)
	var ids []int64
	err = r.rows(c.ctx, q, args, func(rows *sql.Rows) error {
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return 0, fmt.Errorf("holds: listing the holds on %s %s in %s on %s: %w", resourceType, resourceID, cfg.table, c.d, ctxError(c.ctx, err))
	}
	// One statement per hold, by id, each ending it only while it is
	// active: a hold released meanwhile is not counted.
	var n int64
	for _, id := range ids {
		m, err := r.exec(c.ctx, c.q.release, id)
		if err != nil {
			observeForced(db, resourceType+"/"+resourceID, n)
			return int(n), fmt.Errorf("holds: force-releasing hold %d on %s %s in %s on %s (%d ended before): %w", id, resourceType, resourceID, cfg.table, c.d, n, ctxError(c.ctx, err))
		}
		n += m
	}
	observeForced(db, resourceType+"/"+resourceID, n)
	return int(n), nil
}
