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
	"github.com/lockplugin/lockplugin/tests/internal/driverhook"
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
	// The wrapper counts the statements its connections execute: queries and
	// execs, direct or through a prepared statement, not the prepares
	// themselves nor the driver's own pings and resets.
	counter := new(atomic.Int64)
	pool := sql.OpenDB(driverhook.Wrap(inner, driverhook.Hooks{
		AfterStatement: func(_ context.Context, _ string, err error) error {
			counter.Add(1)
			return err
		},
	}))
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
