package holds

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/lockplugin/lockplugin/internal/ctxjoin"
	"github.com/lockplugin/lockplugin/internal/plugin"

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
// is a transaction the hold is taken inside it, under a savepoint; on
// PostgreSQL that transaction must be READ COMMITTED, and on SQL Server not
// SNAPSHOT (ErrUnsupported otherwise; see the package documentation).
func Acquire(ctx context.Context, db *gorm.DB, resource Holdable, holder string, opts ...Option) (*Hold, error) {
	if err := checkHolder(holder); err != nil {
		return nil, err
	}
	c, err := start(ctx, db, resource, opts)
	if err != nil {
		return nil, err
	}
	defer c.done()
	ctx = c.ctx
	cfg, sess, res, st := c.cfg, c.sess, c.res, c.st
	ttl := ttlMillis(cfg.ttl)
	callerTx := inTransaction(sess)
	if callerTx {
		if err := checkIsolation(sess, st); err != nil {
			return nil, fmt.Errorf("holds: acquiring %s %s for %q: %w", res.table, res.id, holder, err)
		}
	}
	var h *Hold
	err = run(ctx, sess, st, func(tx *gorm.DB) (err error) {
		h, err = acquireOnce(tx, st, res, holder, ttl, callerTx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("holds: acquiring %s %s for %q on %s: %w", res.table, res.id, holder, c.d, ctxError(ctx, err))
	}
	return h, nil
}

// acquireOnce is one attempt: lock the resource row, count its active
// holds, and insert a hold if a slot is free. The count must see every hold
// committed before the lock was granted: in a transaction of Acquire's own
// the lock is the first statement (and PostgreSQL and SQL Server run it at
// READ COMMITTED), so no earlier snapshot exists; in a caller's transaction
// checkIsolation and a locking count on MySQL and MariaDB see to it.
func acquireOnce(tx *gorm.DB, st statements, res resource, holder string, ttl int64, callerTx bool) (*Hold, error) {
	lock, read := st.lockResource(res.table, res.key)
	if lock != "" {
		r := source(tx).Exec(lock, res.pk)
		if r.Error != nil {
			return nil, r.Error
		}
		if r.RowsAffected == 0 {
			return nil, fmt.Errorf("%w: no row %s = %s in %s", ErrNotFound, res.key, res.id, res.table)
		}
	}
	row := res.fresh()
	r := source(tx).Raw(read, res.pk).Scan(row)
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
	if _, err := scanOne(tx, st.count(callerTx), []any{holder, res.table, res.id}, &n, &mine, &now); err != nil {
		return nil, err
	}
	if mine.Valid {
		// Read as the count was: in a caller's REPEATABLE READ
		// transaction a plain read would not see a hold committed after
		// its snapshot, which the count (a locking read) has just found.
		h, err := readHold(tx, st, st.byIDLatest(callerTx), mine.Int64)
		if h != nil {
			h.key = res.key
		}
		return h, err
	}
	if n >= int64(capacity) {
		return nil, nil
	}
	hr := holdRow{ResourceType: res.table, ResourceID: res.id, Holder: holder, CreatedMs: now}
	if ttl > 0 {
		exp := now + ttl
		hr.ExpiresMs = &exp
	}
	if err := source(tx).Table(st.table).Create(&hr).Error; err != nil {
		return nil, err
	}
	h := hr.hold(st.table)
	h.key = res.key
	return h, nil
}

// checkIsolation refuses a caller's transaction that reads one snapshot
// throughout (PostgreSQL REPEATABLE READ and SERIALIZABLE, SQL Server
// SNAPSHOT): if the caller read anything before Acquire, its count would
// miss the holds granted since, and the resource would be oversold.
// PostgreSQL's SERIALIZABLE would not catch it, since the other acquirers'
// transactions are not serializable.
func checkIsolation(tx *gorm.DB, st statements) error {
	q := st.isolation()
	if q == "" {
		return nil
	}
	var level string
	if _, err := scanOne(tx, q, nil, &level); err != nil {
		return fmt.Errorf("reading the transaction's isolation level on %s: %w", st.d, err)
	}
	if st.snapshotIsolation(level) {
		name := strings.ToUpper(level)
		if st.d.Kind == dialects.SQLServer {
			name = "SNAPSHOT"
		}
		return &dialects.UnsupportedError{
			Dialect: st.d.String(),
			Feature: "holds.Acquire inside a " + name + " transaction",
			Reason:  "its snapshot may predate the resource's lock and miss holds granted since; call Acquire outside the transaction, or in one at READ COMMITTED",
		}
	}
	return nil
}

// inTransaction reports whether db runs inside a caller's transaction.
func inTransaction(db *gorm.DB) bool { return plugin.InTransaction(db.Statement.ConnPool) }

// call is what every operation on one resource starts from: its options,
// a session bound to the context, the database, the resource's table and
// key, and the statements for them.
type call struct {
	cfg  config
	ctx  context.Context // the explicit ctx joined with db's own
	done context.CancelFunc
	sess *gorm.DB
	d    dialects.Dialect
	res  resource
	st   statements
}

// start checks the options, db and the resource, in that order, before
// anything is sent.
func start(ctx context.Context, db *gorm.DB, model Holdable, opts []Option) (*call, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	sess, d, jctx, done, err := begin(ctx, db)
	if err != nil {
		return nil, err
	}
	res, err := resolve(jctx, db, model)
	if err != nil {
		done()
		return nil, err
	}
	return &call{cfg: cfg, ctx: jctx, done: done, sess: sess, d: d, res: res, st: newStatements(d, cfg.table)}, nil
}

// begin checks db and the database, and returns a session of db with no
// leftover conditions, bound to ctx joined with db's own context: the call
// ends when either ends (holds.Acquire(ctx, db.WithContext(r.Context()))
// stops when the request is cancelled). A context that has ended already
// stops the call here, before anything is sent. done must be called when
// the call returns.
func begin(ctx context.Context, db *gorm.DB) (*gorm.DB, dialects.Dialect, context.Context, context.CancelFunc, error) {
	none := func() {}
	if ctx == nil {
		return nil, dialects.Dialect{}, nil, none, fmt.Errorf("%w: nil context", ErrInvalid)
	}
	if db == nil || db.Config == nil || db.Statement == nil {
		return nil, dialects.Dialect{}, nil, none, fmt.Errorf("%w: nil *gorm.DB", ErrInvalid)
	}
	d := dialects.Of(db)
	if err := d.Require(dialects.CapacityHolds); err != nil {
		return nil, d, nil, none, err
	}
	jctx, done := ctxjoin.Join(ctx, db)
	if err := ended(jctx, db); err != nil {
		done()
		return nil, d, nil, none, fmt.Errorf("holds: on %s: %w", d, err)
	}
	return db.Session(&gorm.Session{NewDB: true, Context: jctx, SkipDefaultTransaction: true}), d, jctx, done, nil
}

// scanOne runs a query and scans its first row into dest; found is false
// when there is no row.
func scanOne(tx *gorm.DB, query string, args []any, dest ...any) (found bool, err error) {
	rows, err := source(tx).Raw(query, args...).Rows()
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
