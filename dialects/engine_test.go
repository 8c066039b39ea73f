package dialects_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

// versionDriver is a database/sql driver whose server answers every query
// with one row: its version string. It counts the queries it is sent.
type versionDriver struct {
	version string
	queries atomic.Int64
}

func (d *versionDriver) Open(string) (driver.Conn, error) { return &versionConn{d}, nil }

type versionConn struct{ d *versionDriver }

func (c *versionConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("no prepare") }
func (c *versionConn) Close() error                        { return nil }
func (c *versionConn) Begin() (driver.Tx, error)           { return nil, errors.New("no tx") }
func (c *versionConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	c.d.queries.Add(1)
	return &versionRows{v: c.d.version}, nil
}

type versionRows struct {
	v    string
	done bool
}

func (r *versionRows) Columns() []string { return []string{"version"} }
func (r *versionRows) Close() error      { return nil }
func (r *versionRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done, dest[0] = true, r.v
	return nil
}

type versionConnector struct{ d *versionDriver }

func (c versionConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open("") }
func (c versionConnector) Driver() driver.Driver                        { return c.d }

// openReporting opens a *gorm.DB behind a dialector named name that reports
// no version, over a server that reports version.
func openReporting(t *testing.T, name, version string) (*gorm.DB, *versionDriver) {
	t.Helper()
	drv := &versionDriver{version: version}
	pool := sql.OpenDB(versionConnector{drv})
	t.Cleanup(func() { _ = pool.Close() })
	db, err := gorm.Open(&dryrun.Dialector{DialectorName: name}, &gorm.Config{
		ConnPool: pool, DisableAutomaticPing: true, SkipDefaultTransaction: true, Logger: logger.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dialects.Forget(db) })
	return db, drv
}

// The PostgreSQL dialector reports no version, so Of asks the server once
// per pool, and every session of the pool (WithContext, Session, a
// concurrent first use) shares the answer.
func TestOfAsksTheServerOncePerPool(t *testing.T) {
	for _, c := range []struct {
		name, version string
		engine        dialects.Engine
		label         string
	}{
		{"postgres", "CockroachDB CCL v23.2.4 (x86_64-pc-linux-gnu, built 2024/04/08, go1.21.9)", dialects.CockroachDB, "CockroachDB 23.2.4"},
		{"postgres", "PostgreSQL 11.2-YB-2.20.1.0-b0 on x86_64-pc-linux-gnu", dialects.YugabyteDB, "YugabyteDB 2.20.1.0"},
		{"postgres", "PostgreSQL 16.4 (Debian 16.4-1.pgdg120+2) on x86_64-pc-linux-gnu", dialects.NoEngine, "PostgreSQL"},
		{"mysql", "8.0.11-TiDB-v8.4.0", dialects.TiDB, "TiDB 8.4.0"},
		{"mysql", "10.11.6-MariaDB", dialects.NoEngine, "MariaDB 10.11.6"},
	} {
		t.Run(c.label, func(t *testing.T) {
			db, drv := openReporting(t, c.name, c.version)
			var wg sync.WaitGroup
			got := make([]dialects.Dialect, 8)
			for i := range got {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i] = dialects.Of(db.WithContext(context.Background()).Session(&gorm.Session{}))
				}()
			}
			wg.Wait()
			for _, d := range got {
				if d.Engine != c.engine || d.String() != c.label {
					t.Fatalf("Of = %s (engine %q), want %s (engine %q)", d, d.Engine, c.label, c.engine)
				}
			}
			if n := drv.queries.Load(); n != 1 {
				t.Fatalf("the server was asked %d times, want once", n)
			}
			dialects.Forget(db)
			_ = dialects.Of(db)
			if n := drv.queries.Load(); n != 2 {
				t.Fatalf("after Forget the server was asked %d times in all, want 2", n)
			}
		})
	}
}

// A DryRun session sends nothing, not even the version query: a test
// injects the version instead.
func TestAssumeServerVersion(t *testing.T) {
	db, err := dryrun.Open("postgres", "")
	if err != nil {
		t.Fatal(err)
	}
	defer dialects.Forget(db)
	if d := dialects.Of(db); d.Engine != dialects.NoEngine || !d.Supports(dialects.AdvisoryLock) {
		t.Fatalf("DryRun postgres = %s, want PostgreSQL with advisory locks", d)
	}
	dialects.AssumeServerVersion(db, "CockroachDB CCL v24.1.0")
	d := dialects.Of(db.Session(&gorm.Session{}))
	if d.Engine != dialects.CockroachDB {
		t.Fatalf("after AssumeServerVersion: %s", d)
	}
	err = d.Require(dialects.AdvisoryLock)
	if !errors.Is(err, dialects.ErrUnsupported) {
		t.Fatalf("CockroachDB advisory lock: %v, want ErrUnsupported", err)
	}
	t.Log(err)
}

// Each engine's rows stand apart from its protocol's: what the engine
// cannot do correctly is refused, naming the engine and why.
func TestEngineRows(t *testing.T) {
	tidb := dialects.New("mysql", "8.0.11-TiDB-v8.4.0")
	crdb := dialects.New("postgres", "CockroachDB CCL v23.2.0")
	yb := dialects.New("postgres", "11.2-YB-2.20.0.0-b0")
	for _, c := range []struct {
		d    dialects.Dialect
		f    dialects.Feature
		want bool
	}{
		{tidb, dialects.ForUpdate, true},
		{tidb, dialects.NoWait, true},
		{tidb, dialects.LockOf, true},
		{tidb, dialects.ForShare, false},
		{tidb, dialects.SkipLocked, false},
		{tidb, dialects.QueueClaim, false},
		{tidb, dialects.AdvisoryLock, true},
		{tidb, dialects.AdvisoryXactLock, false},
		{tidb, dialects.CapacityHolds, true},
		{tidb, dialects.LeaseTable, true},
		{tidb, dialects.FencedWrite, true},
		{crdb, dialects.ForUpdate, true},
		{crdb, dialects.AdvisoryLock, false},
		{crdb, dialects.AdvisoryXactLock, false},
		{crdb, dialects.ForShare, false},
		{crdb, dialects.SkipLocked, false},
		{crdb, dialects.QueueClaim, false},
		{crdb, dialects.CapacityHolds, false},
		{crdb, dialects.LeaseTable, false},
		{yb, dialects.ForUpdate, true},
		{yb, dialects.AdvisoryLock, false},
		{yb, dialects.SkipLocked, false},
		{yb, dialects.CapacityHolds, false},
	} {
		if got := c.d.Supports(c.f); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.d, c.f, got, c.want)
		}
		if !c.want {
			err := c.d.Require(c.f)
			if !errors.Is(err, dialects.ErrUnsupported) {
				t.Errorf("%s %s: Require = %v", c.d, c.f, err)
			}
			if ue := (*dialects.UnsupportedError)(nil); !errors.As(err, &ue) || ue.Reason == "" {
				t.Errorf("%s %s: no reason in %v", c.d, c.f, err)
			}
		}
	}
	t.Log(tidb.Require(dialects.SkipLocked))
	t.Log(crdb.Require(dialects.AdvisoryLock))
}
