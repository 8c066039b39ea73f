package holds

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lockplugin/lockplugin/internal/ctxjoin"
	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/observe"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
)

// Acquire grants holder a hold on resource while the resource has a free
// slot. When it is full it returns a nil Hold and an error matching ErrFull
// (and lockplugin.ErrBusy). Two acquirers racing for the last slot never
// both win: see the package documentation for how. The Hold returned
// remembers db and its holds table: h.Release(ctx) gives the slot back.
// A Hold taken inside the caller's transaction remembers that
// transaction; release it there, or with the package function Release on
// another *gorm.DB once the transaction has committed.
//
// A holder that already has an active hold on the resource gets that hold
// back, as it is (a TTL option does not change its expiry: use Extend), not
// a second slot. The capacity is asked of the resource's row as
// read under the lock, so lowering it below the number of active holds
// grants nothing new and leaves the existing holds alone; a capacity of zero
// or less is always full, and said so with an error matching both ErrFull
// and ErrNoCapacity (a capacity column forgotten, or unset on old rows,
// looks like that).
//
// Holders compare byte for byte ("alice" and "alice " are two holders); a
// holder with a NUL byte is refused with ErrInvalid before anything is sent.
// The call ends when ctx or db's own context ends, whichever is first.
//
// The resource's row must exist (ErrNotFound otherwise). A resource without
// a single-column primary key or with a zero key, an empty holder, an
// invalid option value (a negative TTL, a bad Table), or a db.Table that is
// not a plain table name is refused with ErrInvalid before anything is
// sent; nil Options are ignored. When db
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
	res := c.res
	ttl := ttlMillis(c.cfg.ttl)
	if c.callerTx {
		if err := checkIsolation(ctx, c.runner(c.pool), c.st); err != nil {
			return nil, fmt.Errorf("holds: acquiring %s %s for %q: %w", res.table, res.id, holder, err)
		}
	}
	var h *Hold
	err = c.run(ctx, func(r runner) (err error) {
		h, err = acquireOnce(ctx, r, c, holder, ttl)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("holds: acquiring %s %s for %q on %s: %w", res.table, res.id, holder, c.d, ctxError(ctx, err))
	}
	report(db, c.expired)       // observe.go
	observeAcquired(db, res, h) // observe.go
	if h == nil && c.capacity == 0 {
		return nil, fmt.Errorf("holds: acquiring %s %s for %q: its row says a capacity of %d (HoldCapacity of the row as stored), so nothing can be granted; "+
			"if that is not meant, check that the capacity column exists, is set on rows created before it, and is the field HoldCapacity reads: %w (%w)",
			res.table, res.id, holder, c.rawCapacity, ErrNoCapacity, ErrFull)
	}
	if h == nil {
		return nil, fmt.Errorf("holds: acquiring %s %s for %q: all %d slots are held: %w", res.table, res.id, holder, c.capacity, ErrFull)
	}
	h.db = db
	return h, nil
}

// acquireOnce is one attempt: lock the resource row, count its active
// holds, and insert a hold if a slot is free. The count must see every hold
// committed before the lock was granted: in a transaction of Acquire's own
// the lock is the first statement (and PostgreSQL and SQL Server run it at
// READ COMMITTED), so no earlier snapshot exists; in a caller's transaction
// checkIsolation and locking reads on MySQL and MariaDB see to it.
func acquireOnce(ctx context.Context, r runner, c *call, holder string, ttl int64) (*Hold, error) {
	res, st, q := c.res, c.st, c.q
	capacity, err := lockResource(ctx, r, st, res)
	if err != nil {
		return nil, err
	}
	c.capacity, c.rawCapacity = max(capacity, 0), capacity
	if c.observed {
		// Under the lock, so that the count below and the report agree;
		// kept until the transaction commits (a replay sweeps again).
		if c.expired, err = sweepExpired(ctx, r, c); err != nil {
			return nil, err
		}
	}
	var expires any // NULL: no expiry
	if ttl > 0 {
		expires = ttl
	}
	for attempt := 0; ; attempt++ {
		if q.grant != "" && int64(capacity) > 0 {
			// One statement decides and inserts; no row when it did not.
			hr := holdRow{ResourceType: res.table, ResourceID: res.id, Holder: holder}
			found, err := r.row(ctx, q.grant, []any{res.table, res.id, holder, expires, int64(capacity)}, &hr.ID, &hr.CreatedMs, &hr.ExpiresMs)
			if err != nil {
				return nil, err
			}
			if found {
				return hr.hold(st.table, res.key), nil
			}
		}
		// Why not (or, without grant, whether): the count, the holder's own
		// active hold, and the database clock.
		var (
			n    int64
			mine sql.NullInt64
			now  int64
		)
		count := q.count
		if c.callerTx {
			count = q.countShare
		}
		if _, err := r.row(ctx, count, []any{holder, res.table, res.id}, &n, &mine, &now); err != nil {
			return nil, err
		}
		if mine.Valid {
			// Read as the count was: in a caller's REPEATABLE READ
			// transaction a plain read would not see a hold committed after
			// its snapshot, which the count (a locking read) has just found.
			byID := q.byID
			if c.callerTx {
				byID = q.byIDLatest
			}
			h, err := readHold(ctx, r, st, byID, mine.Int64)
			if h != nil {
				h.key = res.key
				return h, err
			}
			if err != nil || attempt >= 2 {
				return nil, err
			}
			continue // released in between: decide again
		}
		if n >= int64(capacity) {
			return nil, nil
		}
		if q.grant != "" {
			if attempt >= 2 {
				return nil, nil
			}
			continue // a slot came free since grant looked: ask again
		}
		hr := holdRow{ResourceType: res.table, ResourceID: res.id, Holder: holder, CreatedMs: now}
		if ttl > 0 {
			exp := now + ttl
			hr.ExpiresMs = &exp
		}
		args := []any{res.table, res.id, holder, now, hr.ExpiresMs}
		if st.insertAnswersRow() {
			if _, err := r.row(ctx, q.insert, args, &hr.ID); err != nil {
				return nil, err
			}
		} else if hr.ID, err = r.insert(ctx, q.insert, args...); err != nil {
			return nil, err
		}
		return hr.hold(st.table, res.key), nil
	}
}

// lockResource locks the resource's row, reads it back under the lock and
// returns its capacity as HoldCapacity says of the row as stored.
func lockResource(ctx context.Context, r runner, st statements, res resource) (int, error) {
	lock, read := st.lockStatements(res.table, res.key)
	if lock != "" {
		n, err := r.exec(ctx, lock, res.pk)
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, fmt.Errorf("%w: no row %s = %s in %s", ErrNotFound, res.key, res.id, res.table)
		}
	}
	return capacityOf(ctx, r, read, res)
}

// checkIsolation refuses a caller's transaction that reads one snapshot
// throughout (PostgreSQL REPEATABLE READ and SERIALIZABLE, SQL Server
// SNAPSHOT): if the caller read anything before Acquire, its count would
// miss the holds granted since, and the resource would be oversold.
// PostgreSQL's SERIALIZABLE would not catch it, since the other acquirers'
// transactions are not serializable.
func checkIsolation(ctx context.Context, r runner, st statements) error {
	q := st.isolation()
	if q == "" {
		return nil
	}
	var level string
	if _, err := r.row(ctx, q, nil, &level); err != nil {
		return fmt.Errorf("reading the transaction's isolation level on %s: %w", st.d, ctxError(ctx, err))
	}
	if st.snapshotIsolation(level) {
		name := st.isolationName(level)
		return &dialects.UnsupportedError{
			Dialect: st.d.String(),
			Feature: "holds.Acquire inside a " + name + " transaction",
			Reason:  "its snapshot may predate the resource's lock and miss holds granted since; call Acquire outside the transaction, or in one at READ COMMITTED",
		}
	}
	return nil
}

// call is what every operation on one resource starts from: its options,
// the joined context, a session of db (for its logger and dialector), the
// database, the resource's table and key, the statements for them, and
// where they run.
type call struct {
	cfg      options
	ctx      context.Context // the explicit ctx joined with db's own
	done     context.CancelFunc
	sess     *gorm.DB
	d        dialects.Dialect
	res      resource
	st       statements
	q        *compiled
	pool     gorm.ConnPool // the caller's transaction, or the source pool
	callerTx bool
	observed bool // an Observer is set: sweep expired holds (observe.go)

	capacity    int             // Acquire: the capacity the row said, at least 0
	rawCapacity int             // as the row said it
	expired     []observe.Event // Acquire: HoldExpired events to report once committed
}

func (c *call) runner(q gorm.ConnPool) runner { return runner{db: c.sess, q: q} }

// start checks the options, db and the resource, in that order, before
// anything is sent.
func start(ctx context.Context, db *gorm.DB, model Holdable, opts []Option) (*call, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	c, err := begin(ctx, db, cfg.table)
	if err != nil {
		return nil, err
	}
	c.cfg = cfg
	if c.res, err = resolve(c.ctx, db, model); err != nil {
		c.done()
		return nil, err
	}
	return c, nil
}

// begin checks db and the database, and returns a call on the holds table
// bound to ctx joined with db's own context: the call ends when either ends
// (holds.Acquire(ctx, db.WithContext(r.Context())) stops when the request
// is cancelled). A context that has ended already stops the call here,
// before anything is sent. c.done must be called when the call returns.
func begin(ctx context.Context, db *gorm.DB, table string) (*call, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrInvalid)
	}
	if db == nil || db.Config == nil || db.Statement == nil {
		return nil, fmt.Errorf("%w: nil *gorm.DB", ErrInvalid)
	}
	d := dialects.Of(db)
	if err := d.Require(dialects.CapacityHolds); err != nil {
		return nil, err
	}
	if db.DryRun {
		return nil, fmt.Errorf("%w: a DryRun session cannot hold (holds sends its statements itself)", ErrInvalid)
	}
	jctx, done := ctxjoin.Join(ctx, db)
	if err := ended(jctx, db); err != nil {
		done()
		return nil, fmt.Errorf("holds: on %s: %w", d, err)
	}
	st := newStatements(d, table)
	pool, callerTx := callPool(jctx, db, table)
	return &call{
		ctx: jctx, done: done, sess: db.Session(&gorm.Session{NewDB: true, Context: jctx}),
		d: d, st: st, q: st.compiled(), pool: pool, callerTx: callerTx,
		observed: plugin.Observer(db) != nil,
	}, nil
}

// readHold reads one hold with a query over holdColumns; nil when there is
// no row.
func readHold(ctx context.Context, r runner, st statements, query string, args ...any) (*Hold, error) {
	var h holdRow
	found, err := r.row(ctx, query, args, &h.ID, &h.ResourceType, &h.ResourceID, &h.Holder, &h.CreatedMs, &h.ExpiresMs, &h.ReleasedMs)
	if err != nil || !found {
		return nil, err
	}
	return h.hold(st.table, ""), nil
}
