package holds

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Release gives the hold's slot back; on success h.ReleasedAt is set from
// the database clock. It is the package form of (*Hold).Release, for a Hold
// built by hand (from an ID kept elsewhere): a Hold returned by Acquire or
// ActiveFor remembers its *gorm.DB and holds table, and h.Release(ctx) is
// the shorter call. A Table option, needed only for a Hold built by hand,
// overrides the table the hold remembers.
//
// Releasing a hold that this handle has already released is a no-op
// returning nil, and sends nothing. A hold that stopped being this
// handle's before the call is reported with an error matching ErrLost,
// saying which: it expired (its TTL passed), or it was released elsewhere
// (ForceRelease by an operator, or another copy of the Hold); nothing is
// changed then. A hold that is not in the table is ErrNotFound; a nil or
// zero Hold is ErrInvalid.
func Release(ctx context.Context, db *gorm.DB, h *Hold, opts ...Option) (released error) {
	if h == nil || h.ID <= 0 {
		return errZeroHold("holds.Release")
	}
	if h.released {
		return nil
	}
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
			h.ReleasedAt, h.released = msTime(&at.Int64), true
			return nil
		}
	}
	n := int64(0)
	if c.q.releaseReturning == "" {
		if n, err = r.exec(ctx, c.q.release, h.ID); err != nil {
			return fmt.Errorf("holds: releasing hold %d on %s: %w", h.ID, c.d, ctxError(ctx, err))
		}
	}
	// Released just now (MySQL, MariaDB, SQLite: the row says when), or
	// not active, or not there at all: the row says which.
	relAt := c.q.relAt
	if c.callerTx {
		relAt = c.q.relAtLatest
	}
	var exp sql.NullInt64
	var now int64
	found, err := r.row(ctx, relAt, []any{h.ID}, &at, &exp, &now)
	if err != nil {
		return fmt.Errorf("holds: reading hold %d on %s: %w", h.ID, c.d, ctxError(ctx, err))
	}
	if !found && n == 1 {
		// Released by the UPDATE above, then deleted by a Purge with an age
		// shorter than the time between the two statements: released all
		// the same, at a time no row says any more.
		h.ReleasedAt, h.released = nil, true
		return nil
	}
	if !found {
		return fmt.Errorf("holds: releasing hold %d: %w in %s", h.ID, ErrNotFound, c.st.table)
	}
	if n == 1 && at.Valid {
		h.ReleasedAt, h.released = msTime(&at.Int64), true
		return nil
	}
	return lostError("releasing", h.ID, c.st.table, at, exp, now)
}

// lostError says why a hold this handle did not release is no longer
// active: released elsewhere (at), or expired (exp <= now).
func lostError(doing string, id int64, table string, at, exp sql.NullInt64, now int64) error {
	switch {
	case at.Valid && exp.Valid && at.Int64 == exp.Int64:
		return fmt.Errorf("holds: %s hold %d in %s: it expired at %s: %w", doing, id, table, fmtMs(exp.Int64), ErrLost)
	case at.Valid:
		return fmt.Errorf("holds: %s hold %d in %s: it was released elsewhere at %s (holds.ForceRelease, or another copy of the Hold): %w", doing, id, table, fmtMs(at.Int64), ErrLost)
	case exp.Valid && exp.Int64 <= now:
		return fmt.Errorf("holds: %s hold %d in %s: it expired at %s: %w", doing, id, table, fmtMs(exp.Int64), ErrLost)
	}
	return fmt.Errorf("holds: %s hold %d in %s: it is no longer active: %w", doing, id, table, ErrLost)
}

func fmtMs(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// Extend moves the expiry of an active hold to ttl from now, by the database
// clock; a ttl of zero removes the expiry. It is the package form of
// (*Hold).Extend, for a Hold built by hand. A hold that is not active
// cannot be extended, since its slot may already be someone else's: one
// this handle released is refused with ErrNotActive, one that expired or
// was ended elsewhere (ForceRelease) with an error matching both ErrLost and
// ErrNotActive. On success h.ExpiresAt is set from the database. The holds
// table is found as Release finds it.
//
// Extend queues on the resource's row lock, as Acquire does, so that no
// acquirer can count the hold as expired while its extension is still to be
// committed; inside a caller's transaction (under a savepoint, as Acquire)
// that lock lasts until the transaction ends. For a Hold built by hand, the
// resource's primary key column is looked up in the database first.
func Extend(ctx context.Context, db *gorm.DB, h *Hold, ttl time.Duration, opts ...Option) error {
	if h == nil || h.ID <= 0 {
		return errZeroHold("holds.Extend")
	}
	if ttl < 0 {
		return fmt.Errorf("%w: holds.Extend of hold %d: negative TTL %v", ErrInvalid, h.ID, ttl)
	}
	if h.released {
		return fmt.Errorf("holds: extending hold %d: this handle released it: %w", h.ID, ErrNotActive)
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
		if errors.Is(err, ErrLost) {
			return err
		}
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalid) {
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
		// Lost before this call: read why (released elsewhere, or
		// expired), as the row is now.
		var at, exp sql.NullInt64
		var now int64
		if _, err := r.row(ctx, q.relAtLatest, []any{h.ID}, &at, &exp, &now); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w (%w)", lostError("extending", h.ID, st.table, at, exp, now), ErrNotActive)
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
		return nil, errZeroHold("a call")
	}
	table := h.table
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.tableSet {
		table = cfg.table
	}
	if table == "" {
		table = DefaultTable
	}
	return begin(ctx, db, table)
}
