package holds

import (
	"context"
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
	sess, st, err := holdCall(ctx, db, h, opts)
	if err != nil {
		return err
	}
	if err := sess.Exec(st.release(), h.ID).Error; err != nil {
		return fmt.Errorf("holds: releasing hold %d on %s: %w", h.ID, st.d, err)
	}
	got, err := readHold(sess, st, st.byID(), h.ID)
	if err != nil {
		return fmt.Errorf("holds: reading hold %d on %s: %w", h.ID, st.d, err)
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
func Extend(ctx context.Context, db *gorm.DB, h *Hold, ttl time.Duration, opts ...Option) error {
	if ttl < 0 {
		return fmt.Errorf("%w: negative TTL %v", ErrInvalid, ttl)
	}
	sess, st, err := holdCall(ctx, db, h, opts)
	if err != nil {
		return err
	}
	var r *gorm.DB
	if ms := ttlMillis(ttl); ms > 0 {
		r = sess.Exec(st.extend(), ms, h.ID)
	} else {
		r = sess.Exec(st.extendForever(), h.ID)
	}
	if r.Error != nil {
		return fmt.Errorf("holds: extending hold %d on %s: %w", h.ID, st.d, r.Error)
	}
	query := st.byID()
	if r.RowsAffected == 0 {
		// Either the hold is not active, or (MySQL counts changed rows,
		// not matched ones) its expiry was already what was asked.
		query = st.activeByID()
	}
	got, err := readHold(sess, st, query, h.ID)
	if err != nil {
		return fmt.Errorf("holds: reading hold %d on %s: %w", h.ID, st.d, err)
	}
	if got == nil {
		if exists, err := readHold(sess, st, st.byID(), h.ID); err == nil && exists == nil {
			return fmt.Errorf("holds: extending hold %d: %w in %s", h.ID, ErrNotFound, st.table)
		}
		return fmt.Errorf("holds: extending hold %d: %w", h.ID, ErrNotActive)
	}
	h.ExpiresAt = got.ExpiresAt
	return nil
}

// holdCall checks the arguments of a call on one hold and finds its table.
func holdCall(ctx context.Context, db *gorm.DB, h *Hold, opts []Option) (*gorm.DB, statements, error) {
	if h == nil || h.ID <= 0 {
		return nil, statements{}, fmt.Errorf("%w: nil hold or hold without an ID", ErrInvalid)
	}
	table := h.table
	if len(opts) > 0 {
		cfg, err := newConfig(opts)
		if err != nil {
			return nil, statements{}, err
		}
		table = cfg.table
	}
	if table == "" {
		table = DefaultTable
	}
	sess, d, err := begin(ctx, db)
	if err != nil {
		return nil, statements{}, err
	}
	return sess, newStatements(d, table), nil
}
