// Package sqlstore is a lease.Store on a database table, through GORM:
// leases that every application server sees, with expiry decided by the
// database's clock.
//
//	// fragment: needs db *gorm.DB
//	store, err := sqlstore.New(db) // creates lock_leases if missing
//	if err != nil {
//		return err
//	}
//	m := lease.NewManager(store)
//	_ = m
//
// Each operation is one statement that commits at once (but SQLite's
// Acquire, which reads first: see below): Acquire takes a row
// that is free, expired or already the caller's and bumps and returns the
// fencing counter (on PostgreSQL a guarded UPDATE and an INSERT ... ON
// CONFLICT DO NOTHING in one statement, on SQLite one upsert after a read
// that refuses a name another owner holds without it, on MySQL and
// MariaDB an INSERT ... ON DUPLICATE KEY UPDATE whose assignments only
// change a row the caller may take, on SQL Server and Oracle a MERGE). An acquire retried by the same owner
// (its first reply lost) gets the same fence back; an acquire that is
// refused changes nothing, and on PostgreSQL and SQLite is read only, so
// that waiters polling a held name do not slow its holder down (on SQLite,
// do not take the database's write lock).
//
// Fences are large numbers: every grant hands out max(the name's previous
// fence + 1, the database clock in ms times 1000), so that the row of a
// name whose lease is over can be removed and the name's next fence is
// still above every fence it had. The store removes such rows once the
// name was last granted more than a day ago (Retention, Purge): the table
// holds the live leases and the names used within the retention.
//
// The statements run on db's connection pool, never inside a caller's
// transaction: a lock that only became visible at the caller's commit would
// exclude nobody. New therefore refuses a *gorm.DB that is inside a
// transaction.
//
// # Durable commits
//
// A lease is exactly as safe as the database's commit. The store relies on
// a committed acquire surviving a crash of the database server: if it is
// lost, the name is free again after the restart and the next holder gets
// the same fence as the lost one, while the first holder may still be
// working. So run the table store on a database that flushes its log at
// commit: on PostgreSQL synchronous_commit on (the default; with off, a
// server crash gave a second holder the same lease and the same fence in 4
// of 5 trials), and fsync on; on MySQL and MariaDB
// innodb_flush_log_at_trx_commit = 1 (the default); on SQLite
// synchronous=FULL in WAL mode, or NORMAL only where a power loss is not a
// concern (a crashed process loses nothing either way). A replica promoted
// after asynchronous replication can lose acquires the same way.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockplugin/lockplugin/internal/ctxjoin"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/internal/sqldriver"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/lease"
)

// Store is a lease.Store on a table. It is safe for concurrent use. Make
// it with New: every method of a zero Store or a nil *Store returns an
// error naming sqlstore.New.
type Store struct {
	db     *gorm.DB
	pool   gorm.ConnPool
	d      dialects.Dialect
	dr     sqldriver.Driver
	table  string
	quoted string
	stmts  statements

	// retention is the automatic retention's age (negative: off);
	// lastPurge when its last batch began (UnixNano), purging whether one
	// runs.
	retention time.Duration
	lastPurge atomic.Int64
	purging   atomic.Bool

	// notify, set by Listen, waits with LISTEN/NOTIFY (notify.go).
	notify *notifier
}

var _ lease.Store = (*Store)(nil)

// Option configures New and CreateTableSQL. A nil Option is ignored; an
// invalid value is returned as an error by the call.
type Option func(*config)

type config struct {
	table     string
	create    bool
	retention time.Duration
	receive   Receive // Listen's (notify.go)
}

// Table sets the table name (default "lock_leases"), optionally qualified
// by a schema ("app.leases"). It must be an identifier.
func Table(name string) Option { return func(c *config) { c.table = name } }

// CreateTable sets whether New creates the table when it is missing
// (default true). Pass false when the database user may not create
// tables, and create it beforehand from CreateTableSQL.
func CreateTable(create bool) Option { return func(c *config) { c.create = create } }

func buildConfig(opts []Option) (config, error) {
	cfg := config{table: DefaultTable, create: true}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.retention == 0 {
		cfg.retention = DefaultRetention
	}
	return cfg, nil
}

// New returns a Store on db's connection pool, creating the table unless
// CreateTable(false) is given. It returns an error, and sends nothing, when
// db is inside a transaction, when the table name is not an identifier, or
// when the database cannot run the table store (ErrUnsupported naming it).
// SQLite needs version 3.35 or later (for RETURNING).
//
// Any number of processes may run New at once on a fresh database (replicas
// starting together): when creating the table fails because another one
// created it at the same moment, New finds the table there and succeeds.
//
// The context db carries (db.WithContext) bounds New's own statements, and
// stays with the store: each later call ends when its own ctx or that
// context is done, whichever comes first. Pass a db whose context lasts as
// long as the store is used (none, or the application's), not a startup
// timeout.
func New(db *gorm.DB, opts ...Option) (*Store, error) {
	if db == nil || db.Config == nil || db.Statement == nil {
		return nil, errors.New("sqlstore: New needs a *gorm.DB, got nil")
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	pool := db.Statement.ConnPool
	if plugin.InTransaction(pool) {
		return nil, errors.New("sqlstore: db is inside a transaction; lease statements must commit at once, so pass the *gorm.DB the transaction was begun from")
	}
	d := dialects.Of(db)
	if err := d.Require(dialects.LeaseTable); err != nil {
		return nil, err
	}
	table, err := quoteTable(d, cfg.table)
	if err != nil {
		return nil, err
	}
	stmts, err := render(d, table)
	if err != nil {
		return nil, err
	}
	if pool == nil {
		return nil, errors.New("sqlstore: db has no connection pool")
	}
	s := &Store{db: db.Session(&gorm.Session{NewDB: true}), pool: pool, d: d, dr: drivers.For(d), table: cfg.table, quoted: table, stmts: stmts, retention: cfg.retention}
	if err := s.listen(cfg.receive); err != nil {
		return nil, err
	}
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if err := s.checkVersion(ctx); err != nil {
		return nil, err
	}
	if cfg.create {
		ddl, err := createTableSQL(d, table)
		if err != nil {
			return nil, err
		}
		if err := s.createTable(ctx, ddl); err != nil {
			return nil, fmt.Errorf("sqlstore: creating table %s on %s: %w", cfg.table, d, err)
		}
	}
	return s, nil
}

// createTable runs the table's DDL, which does nothing when the table
// exists. Processes that run it at the same moment on a fresh database
// race inside it all the same: PostgreSQL's CREATE TABLE IF NOT EXISTS
// then fails for all but one of them (23505 on pg_type_typname_nsp_index,
// 42P07, 42710), once the winner has committed. So a failed DDL is a
// success when the table can be read right after; otherwise it is tried
// again, up to three times, and the last error returned.
func (s *Store) createTable(ctx context.Context, ddl string) error {
	var err error
	for range 3 {
		if _, err = s.exec(ctx, ddl, nil); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		if s.tableReadable(ctx) {
			return nil
		}
	}
	return err
}

// tableReadable reports whether the lease table exists with the store's
// columns.
func (s *Store) tableReadable(ctx context.Context) bool {
	rows, err := s.pool.QueryContext(ctx, tableReadableSQL(s.quoted))
	if err != nil {
		return false
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err() == nil
}

// tableReadableSQL reads no row of the table, and fails unless it has the
// store's columns.
func tableReadableSQL(table string) string {
	return "SELECT lock_name, owner, expires_at, fence FROM " + table + " WHERE 1 = 0"
}

// checkVersion refuses a server version the store cannot run on
// (SQLite before 3.35, which has no RETURNING).
func (s *Store) checkVersion(ctx context.Context) error {
	query, check := s.dr.LeaseTable().VersionCheck()
	if check == nil {
		return nil
	}
	var v string
	if err := s.pool.QueryRowContext(ctx, query).Scan(&v); err != nil {
		return fmt.Errorf("sqlstore: reading the %s version: %w", s.d, err)
	}
	return check(v)
}

// Table returns the table name ("" for a Store not made by New).
func (s *Store) Table() string {
	if s == nil {
		return ""
	}
	return s.table
}

// errZeroStore answers every call on a Store not made by New.
var errZeroStore = errors.New("sqlstore: Store has no database (zero value or nil); use sqlstore.New")

// usable refuses a Store not made by New.
func (s *Store) usable() error {
	if s == nil || s.db == nil || s.db.Statement == nil || s.pool == nil {
		return errZeroStore
	}
	return nil
}

// Acquire takes name for owner when it is free, released or expired, in one
// statement, and returns the new fence: above every fence the name had,
// and at least the database clock in ms times 1000 (see Retention).
// Every so often it also starts one batch of the automatic retention in
// the background (see Retention). When owner already holds name and
// its lease has not expired (a retry whose first reply was lost), Acquire
// returns ok with the same fence and sets the expiry to ttl from now. A
// refused Acquire changes nothing; on PostgreSQL it is a read-only
// statement, and on SQLite a read before the write, which is then not
// sent (so a refusal takes no write lock).
func (s *Store) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	v, err := s.values(ctx, name, owner, ttl)
	if err != nil {
		return 0, false, err
	}
	ctx, cancel, err := s.join(ctx, "acquire")
	if err != nil {
		return 0, false, err
	}
	defer cancel()
	var fence int64
	err = s.retry(ctx, func() error {
		fence = 0
		return s.acquire(ctx, v, &fence)
	})
	if err != nil {
		return 0, false, s.wrap("acquire", err)
	}
	s.autoPurge()
	return fence, fence > 0, nil
}

// acquire runs the acquire statement once; fence stays 0 when the lease is
// held.
func (s *Store) acquire(ctx context.Context, v values, fence *int64) error {
	if s.stmts.tx != nil {
		return s.txAcquire(ctx, v, fence)
	}
	if s.stmts.readsFirst {
		if held, err := s.heldByOther(ctx, v); held || err != nil {
			return err
		}
	}
	st := s.stmts.acquire
	switch s.stmts.acquireReply {
	case sqldriver.LeaseInsertID:
		// One statement, granted or refused: the fence, 0 when refused,
		// is its insert id (MySQL's acquire).
		res, err := s.exec(ctx, st.SQL, st.bind(v))
		if err != nil {
			return err
		}
		*fence, err = res.LastInsertId()
		return err
	case sqldriver.LeaseOut:
		v.fence = fence
		_, err := s.exec(ctx, st.SQL, st.bind(v))
		return err
	}
	_, err := s.queryRow(ctx, st, v, fence) // no row: refused, nothing inserted
	return err
}

// queryRow runs st and scans its one row into dest, reporting whether
// there was one (no row is no error), and traces it.
func (s *Store) queryRow(ctx context.Context, st stmt, v values, dest any) (bool, error) {
	begin := time.Now()
	args := st.bind(v)
	err := s.pool.QueryRowContext(ctx, st.SQL, args...).Scan(dest)
	var rows int64
	switch {
	case err == nil:
		rows = 1
	case errors.Is(err, sql.ErrNoRows):
		err = nil
	}
	s.trace(ctx, begin, st.SQL, args, rows, err)
	return rows == 1, err
}

// Release frees name if owner holds it. The row stays until the retention
// removes it (see Retention), which never lets a fence go backwards.
func (s *Store) Release(ctx context.Context, name, owner string) (bool, error) {
	if err := s.usable(); err != nil {
		return false, err
	}
	return s.update(ctx, "release", s.stmts.release, name, owner, 0)
}

// Refresh sets name's expiry to ttl from now, by the database's clock, if
// owner holds it.
func (s *Store) Refresh(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if err := s.usable(); err != nil {
		return false, err
	}
	return s.update(ctx, "refresh", s.stmts.refresh, name, owner, ttl)
}

func (s *Store) update(ctx context.Context, op string, st stmt, name, owner string, ttl time.Duration) (bool, error) {
	v, err := s.values(ctx, name, owner, ttl)
	if err != nil {
		return false, err
	}
	ctx, cancel, err := s.join(ctx, op)
	if err != nil {
		return false, err
	}
	defer cancel()
	var n int64
	err = s.retry(ctx, func() error {
		if s.stmts.tx != nil {
			var err error
			n, err = s.txUpdate(ctx, st, v)
			return err
		}
		res, err := s.exec(ctx, st.SQL, st.bind(v))
		if err != nil {
			return err
		}
		if s.stmts.updateReply == sqldriver.LeaseInsertID {
			n, err = res.LastInsertId() // the fence of a matched row (MySQL's release)
		} else {
			n, err = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return false, s.wrap(op, err)
	}
	return n > 0, nil
}

// join returns a context that ends when ctx or the context db carried at
// New ends. A context already done fails the call at once, before any SQL.
func (s *Store) join(ctx context.Context, op string) (context.Context, context.CancelFunc, error) {
	if err := s.usable(); err != nil {
		return nil, nil, err
	}
	if c := s.db.Statement.Context; c != nil && c.Err() != nil {
		return nil, nil, s.wrap(op, context.Cause(c))
	}
	ctx, cancel := ctxjoin.Join(ctx, s.db)
	return ctx, cancel, nil
}

// retry runs one statement, again up to twice when the database chose it
// as a deadlock victim or failed to serialise it: the statement rolled
// back whole, so running it again is safe. (Not where the driver says so:
// SQLite's BUSY is not retried, its busy_timeout has already waited.)
func (s *Store) retry(ctx context.Context, run func() error) error {
	for attempt := 1; ; attempt++ {
		err := run()
		if err == nil || attempt == 3 || !s.stmts.retries || !dialects.IsRetryable(err) || ctx.Err() != nil {
			return err
		}
	}
}

func (s *Store) values(ctx context.Context, name, owner string, ttl time.Duration) (values, error) {
	if err := s.usable(); err != nil {
		return values{}, err
	}
	// lease.CheckCall's checks, with the owner column's stricter rule in
	// place of its empty-owner check (third, after ctx and name).
	if ctx != nil && name != "" && (owner == "" || len(owner) > 64 || !plainKey(owner)) {
		return values{}, fmt.Errorf("sqlstore: owner must be 1 to 64 printable ASCII characters, got %q", owner)
	}
	if err := lease.CheckCall(ctx, name, owner, ttl); err != nil {
		return values{}, fmt.Errorf("sqlstore: %w", err)
	}
	return values{name: key(name), owner: owner, ttl: millis(ttl)}, nil
}

// millis rounds ttl up to whole milliseconds: a TTL under a millisecond
// must not become 0, "no expiry". It divides before rounding, so that the
// longest TTLs do not overflow into a negative (already expired) one.
func millis(ttl time.Duration) int64 {
	ms := int64(ttl / time.Millisecond)
	if ttl%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// heldByOther reports whether another owner holds v.name, by a read
// (sqldriver.LeaseHeldReader).
func (s *Store) heldByOther(ctx context.Context, v values) (bool, error) {
	var one int
	return s.queryRow(ctx, s.stmts.heldByOther, v, &one)
}

func (s *Store) exec(ctx context.Context, query string, args []any) (sql.Result, error) {
	begin := time.Now()
	res, err := s.pool.ExecContext(ctx, query, args...)
	var rows int64 = -1
	if err == nil {
		rows, _ = res.RowsAffected()
	}
	s.trace(ctx, begin, query, args, rows, err)
	return res, err
}

// trace hands the statement to GORM's logger, so lease statements show up
// with the application's other SQL.
func (s *Store) trace(ctx context.Context, begin time.Time, query string, args []any, rows int64, err error) {
	if s.db.Logger == nil {
		return
	}
	s.db.Logger.Trace(ctx, begin, func() (string, int64) {
		return s.db.Dialector.Explain(query, args...), rows
	}, err)
}

// wrap names the operation and the database; the Manager names the lock.
func (s *Store) wrap(op string, err error) error {
	return fmt.Errorf("sqlstore: %s on %s: %w", op, s.d, err)
}
