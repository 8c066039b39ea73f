package advisory_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// Each benchmark pairs advisory.With (leaf "lockplugin") with the same lock
// written by hand on a *sql.Conn pinned from the same pool (leaf
// "baseline=raw-sql"), on PostgreSQL and MariaDB/MySQL. Both report the
// statements they send per acquire+release cycle as "stmts/op", counted by
// a driver wrapper that sees every statement database/sql executes. The
// hand-written cycle pins a connection, locks, unlocks and returns the
// connection, as With does, without With's checks, bookkeeping and
// detached release.

func BenchmarkWith(b *testing.B) {
	benchCycle(b, nil, map[string]rawCycle{
		"postgres": rawSQL("SELECT pg_advisory_lock($1)", "SELECT pg_advisory_unlock($1)", true),
		"mysql":    rawSQL("SELECT GET_LOCK(?, 31536000)", "SELECT RELEASE_LOCK(?)", false),
	})
}

func BenchmarkWithTimeout(b *testing.B) {
	benchCycle(b, []advisory.Option{advisory.WaitAtMost(time.Second)}, map[string]rawCycle{
		// By hand, a bounded PostgreSQL wait sets lock_timeout and puts it back.
		"postgres": func(ctx context.Context, conn *sql.Conn, name string) error {
			key := advisory.PostgresKey(name)
			for _, q := range []string{"SET lock_timeout = '1s'", "SELECT pg_advisory_lock($1)", "SET lock_timeout = 0"} {
				var args []any
				if q == "SELECT pg_advisory_lock($1)" {
					args = []any{key}
				}
				if _, err := conn.ExecContext(ctx, q, args...); err != nil {
					return err
				}
			}
			return unlockPG(ctx, conn, key)
		},
		"mysql": rawSQL("SELECT GET_LOCK(?, 1)", "SELECT RELEASE_LOCK(?)", false),
	})
}

func BenchmarkWithTry(b *testing.B) {
	benchCycle(b, []advisory.Option{advisory.WaitAtMost(0)}, map[string]rawCycle{
		"postgres": rawSQL("SELECT pg_try_advisory_lock($1)", "SELECT pg_advisory_unlock($1)", true),
		"mysql":    rawSQL("SELECT GET_LOCK(?, 0)", "SELECT RELEASE_LOCK(?)", false),
	})
}

// rawCycle acquires and releases name by hand on conn.
type rawCycle func(ctx context.Context, conn *sql.Conn, name string) error

// rawSQL is a cycle of one acquiring and one releasing query, each
// answering 1/true for success. PostgreSQL takes the hashed key.
func rawSQL(lock, unlock string, pg bool) rawCycle {
	return func(ctx context.Context, conn *sql.Conn, name string) error {
		var arg any = name
		if pg {
			arg = advisory.PostgresKey(name)
		}
		var got sql.NullString
		if err := conn.QueryRowContext(ctx, lock, arg).Scan(&got); err != nil {
			return err
		}
		if got.Valid && got.String != "1" && got.String != "true" && got.String != "" {
			return errors.New("not acquired: " + got.String)
		}
		var ok sql.NullString
		if err := conn.QueryRowContext(ctx, unlock, arg).Scan(&ok); err != nil {
			return err
		}
		if ok.String != "1" && ok.String != "true" {
			return errors.New("not released")
		}
		return nil
	}
}

func unlockPG(ctx context.Context, conn *sql.Conn, key int64) error {
	var ok bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_advisory_unlock($1)", key).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return errors.New("not released")
	}
	return nil
}

func benchCycle(b *testing.B, opts []advisory.Option, raw map[string]rawCycle) {
	for _, kind := range []string{testdb.Postgres, testdb.MySQL} {
		tg := testdb.Get(b, kind)
		pool, counter, db := countingDB(b, tg)
		name := lockName(b)
		// A cancellable context, as a request's or a job's would be: with
		// one, drivers watch each statement for cancellation, and so the
		// hand-written cycle pays what advisory's detached, time-bounded
		// release pays anyway.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b.Run(tg.Name+"/lockplugin", func(b *testing.B) {
			b.ReportAllocs()
			start := counter.Load()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := advisory.With(ctx, db, name, noop, opts...); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(counter.Load()-start)/float64(b.N), "stmts/op")
		})
		b.Run(tg.Name+"/baseline=raw-sql", func(b *testing.B) {
			b.ReportAllocs()
			start := counter.Load()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				conn, err := pool.Conn(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := raw[kind](ctx, conn, name); err != nil {
					b.Fatal(err)
				}
				_ = conn.Close()
			}
			b.StopTimer()
			b.ReportMetric(float64(counter.Load()-start)/float64(b.N), "stmts/op")
		})
	}
}

// countingDB opens a pool to tg's server through a driver wrapper that
// counts statements, and GORM over that pool.
func countingDB(b *testing.B, tg *testdb.Target) (*sql.DB, *atomic.Int64, *gorm.DB) {
	b.Helper()
	var inner driver.Connector
	switch tg.Kind() {
	case testdb.Postgres:
		cfg, err := pgx.ParseConfig(tg.DSN)
		if err != nil {
			b.Fatal(err)
		}
		inner = stdlib.GetConnector(*cfg)
	case testdb.MySQL:
		cfg, err := mysqldriver.ParseDSN(tg.DSN)
		if err != nil {
			b.Fatal(err)
		}
		if inner, err = mysqldriver.NewConnector(cfg); err != nil {
			b.Fatal(err)
		}
	}
	counter := new(atomic.Int64)
	pool := sql.OpenDB(&countingConnector{inner: inner, n: counter})
	b.Cleanup(func() { _ = pool.Close() })
	var dialector gorm.Dialector
	if tg.Kind() == testdb.Postgres {
		dialector = postgres.New(postgres.Config{Conn: pool})
	} else {
		dialector = mysql.New(mysql.Config{Conn: pool})
	}
	db, err := gorm.Open(dialector, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		b.Fatal(err)
	}
	return pool, counter, db
}

// countingConnector counts the statements its connections execute:
// queries and execs, direct or through a prepared statement, not the
// prepares themselves nor the driver's own pings and resets.
type countingConnector struct {
	inner driver.Connector
	n     *atomic.Int64
}

func (c *countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, n: c.n}, nil
}

func (c *countingConnector) Driver() driver.Driver { return c.inner.Driver() }

type countingConn struct {
	driver.Conn
	n *atomic.Int64
}

func (c *countingConn) count(err error) {
	if !errors.Is(err, driver.ErrSkip) {
		c.n.Add(1)
	}
}

func (c *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	rows, err := qc.QueryContext(ctx, q, args)
	c.count(err)
	return rows, err
}

func (c *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	ec, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	res, err := ec.ExecContext(ctx, q, args)
	c.count(err)
	return res, err
}

func (c *countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if pc, ok := c.Conn.(driver.ConnPrepareContext); ok {
		st, err = pc.PrepareContext(ctx, q)
	} else {
		st, err = c.Conn.Prepare(q)
	}
	if err != nil {
		return nil, err
	}
	return &countingStmt{Stmt: st, conn: c}, nil
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if bc, ok := c.Conn.(driver.ConnBeginTx); ok {
		return bc.BeginTx(ctx, opts)
	}
	//lint:ignore SA1019 the fallback for drivers without BeginTx
	return c.Conn.Begin()
}

func (c *countingConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *countingConn) CheckNamedValue(v *driver.NamedValue) error {
	if nc, ok := c.Conn.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(v)
	}
	return driver.ErrSkip
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *countingConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

type countingStmt struct {
	driver.Stmt
	conn *countingConn
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	ec, ok := s.Stmt.(driver.StmtExecContext)
	if !ok {
		return nil, errors.New("counting driver: statement without ExecContext")
	}
	res, err := ec.ExecContext(ctx, args)
	s.conn.count(err)
	return res, err
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := s.Stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, errors.New("counting driver: statement without QueryContext")
	}
	rows, err := qc.QueryContext(ctx, args)
	s.conn.count(err)
	return rows, err
}

func (s *countingStmt) CheckNamedValue(v *driver.NamedValue) error {
	if nc, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(v)
	}
	return s.conn.CheckNamedValue(v)
}
