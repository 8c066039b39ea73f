package holds

import (
	"context"
	"database/sql"
	"fmt"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
)

// Acquire grants holder a hold on resource while the resource has a free
// slot, and returns (nil, nil) when it is full. Two acquirers racing for the
// last slot never both win: see the package documentation for how.
//
// A holder that already has an active hold on the resource gets that hold
// back, as it is (a TTL option does not change its expiry: use Extend), not
// a second slot. The capacity is asked of the resource's row as
// read under the lock, so lowering it below the number of active holds
// grants nothing new and leaves the existing holds alone; a capacity of zero
// or less is always full.
//
// The resource's row must exist (ErrNotFound otherwise). A resource without
// a single-column primary key or with a zero key, an empty holder or a
// negative TTL is refused with ErrInvalid before anything is sent. When db
// is a transaction the hold is taken inside it, under a savepoint.
func Acquire(ctx context.Context, db *gorm.DB, resource Holdable, holder string, opts ...Option) (*Hold, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := checkHolder(holder); err != nil {
		return nil, err
	}
	sess, d, err := begin(ctx, db)
	if err != nil {
		return nil, err
	}
	res, err := resolve(ctx, db, resource)
	if err != nil {
		return nil, err
	}
	st := newStatements(d, cfg.table)
	ttl := ttlMillis(cfg.ttl)
	var h *Hold
	err = run(ctx, sess, st, func(tx *gorm.DB) (err error) {
		h, err = acquireOnce(tx, st, res, holder, ttl)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("holds: acquiring %s %s for %q on %s: %w", res.table, res.id, holder, d, err)
	}
	return h, nil
}

// acquireOnce is one attempt: lock the resource row, count its active
// holds, and insert a hold if a slot is free.
func acquireOnce(tx *gorm.DB, st statements, res resource, holder string, ttl int64) (*Hold, error) {
	lock, read := st.lockResource(res.table, res.key)
	if lock != "" {
		r := tx.Exec(lock, res.pk)
		if r.Error != nil {
			return nil, r.Error
		}
		if r.RowsAffected == 0 {
			return nil, fmt.Errorf("%w: no row %s = %s in %s", ErrNotFound, res.key, res.id, res.table)
		}
	}
	row := res.fresh()
	r := tx.Raw(read, res.pk).Scan(row)
	if r.Error != nil {
		return nil, r.Error
	}
	if r.RowsAffected == 0 {
		return nil, fmt.Errorf("%w: no row %s = %s in %s", ErrNotFound, res.key, res.id, res.table)
	}
	capacity := row.(Holdable).HoldCapacity()

	var (
		n    int64
		mine sql.NullInt64
		now  int64
	)
	if _, err := scanOne(tx, st.count(), []any{holder, res.table, res.id}, &n, &mine, &now); err != nil {
		return nil, err
	}
	if mine.Valid {
		return readHold(tx, st, st.byID(), mine.Int64)
	}
	if n >= int64(capacity) {
		return nil, nil
	}
	hr := holdRow{ResourceType: res.table, ResourceID: res.id, Holder: holder, CreatedMs: now}
	if ttl > 0 {
		exp := now + ttl
		hr.ExpiresMs = &exp
	}
	if err := tx.Table(st.table).Create(&hr).Error; err != nil {
		return nil, err
	}
	return hr.hold(st.table), nil
}

// begin checks db and the database, and returns a session of db with no
// leftover conditions, bound to ctx.
func begin(ctx context.Context, db *gorm.DB) (*gorm.DB, dialects.Dialect, error) {
	if ctx == nil {
		return nil, dialects.Dialect{}, fmt.Errorf("%w: nil context", ErrInvalid)
	}
	if db == nil || db.Config == nil || db.Statement == nil {
		return nil, dialects.Dialect{}, fmt.Errorf("%w: nil *gorm.DB", ErrInvalid)
	}
	d := dialects.Of(db)
	if err := d.Require(dialects.CapacityHolds); err != nil {
		return nil, d, err
	}
	return db.Session(&gorm.Session{NewDB: true, Context: ctx, SkipDefaultTransaction: true}), d, nil
}

// scanOne runs a query and scans its first row into dest; found is false
// when there is no row.
func scanOne(tx *gorm.DB, query string, args []any, dest ...any) (found bool, err error) {
	rows, err := tx.Raw(query, args...).Rows()
	if err != nil {
		return false, err
	}
	defer func() {
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}()
	if !rows.Next() {
		return false, rows.Err()
	}
	return true, rows.Scan(dest...)
}

// readHold reads one hold with a query over holdColumns; nil when there is
// no row.
func readHold(tx *gorm.DB, st statements, query string, args ...any) (*Hold, error) {
	var r holdRow
	found, err := scanOne(tx, query, args, &r.ID, &r.ResourceType, &r.ResourceID, &r.Holder, &r.CreatedMs, &r.ExpiresMs, &r.ReleasedMs)
	if err != nil || !found {
		return nil, err
	}
	return r.hold(st.table), nil
}
