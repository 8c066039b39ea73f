package locks

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	mysqldialect "gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/driverhook"
)

// TestRenderWait: WaitAtMost's exact SQL where the bound is part of the
// lock clause, and its refusals (before any SQL) elsewhere.
func TestRenderWait(t *testing.T) {
	wait := func(opts ...lockplugin.LockOption) func(db *gorm.DB) *gorm.DB {
		return find(lockplugin.ForUpdate(opts...))
	}
	share := func(opts ...lockplugin.LockOption) func(db *gorm.DB) *gorm.DB {
		return find(lockplugin.ForShare(opts...))
	}
	w := lockplugin.WaitAtMost
	setting := "error: in DryRun, ToSQL or a subquery is not supported on "
	cases := []struct {
		db, name string
		query    func(db *gorm.DB) *gorm.DB
		want     string
	}{
		{"mariadb-10.11.6", "300ms rounds up to 1 s", wait(w(300 * time.Millisecond)), "SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE WAIT 1"},
		{"mariadb-10.11.6", "2s", wait(w(2 * time.Second)), "SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE WAIT 2"},
		{"mariadb-10.11.6", "2.001s rounds up", wait(w(2*time.Second + time.Millisecond)), "SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE WAIT 3"},
		{"mariadb-10.5.23", "share", share(w(time.Second)), "SELECT * FROM `lk_jobs` WHERE state = ? LOCK IN SHARE MODE WAIT 1"},
		{"oracle", "300ms rounds up to 1 s", wait(w(300 * time.Millisecond)), `SELECT * FROM "lk_jobs" WHERE state = :1 FOR UPDATE WAIT 1`},
		{"oracle", "Of the one table", wait(lockplugin.Of("lk_jobs"), w(5*time.Second)), `SELECT * FROM "lk_jobs" WHERE state = :1 FOR UPDATE WAIT 5`},
		{"mysql-8.0.36", "DryRun", wait(w(time.Second)), setting + "MySQL 8.0.36"},
		{"mysql-5.7.44", "DryRun", wait(w(time.Second)), setting + "MySQL 5.7.44"},
		{"sqlite", "SQLite", wait(w(time.Second)), "error: is not supported on SQLite"},
		{"postgres", "DryRun", wait(w(time.Second)), setting + "PostgreSQL"},
		{"sqlserver", "DryRun", wait(w(time.Second)), setting + "SQL Server"},
		{"postgres", "with NoWait", wait(lockplugin.NoWait, w(time.Second)), "invalid: WaitAtMost(1s) with NoWait"},
		{"oracle", "with SkipLocked", wait(lockplugin.SkipLocked, w(time.Second)), "invalid: WaitAtMost(1s) with SkipLocked"},
		{"mariadb-10.11.6", "zero", wait(w(0)), "invalid: WaitAtMost(0s): the bound must be positive"},
		{"mariadb-10.11.6", "negative", wait(w(-time.Second)), "invalid: the bound must be positive"},
		{"oracle", "over a day", wait(w(25 * time.Hour)), "invalid: WaitAtMost(25h0m0s) is longer than 24h0m0s"},
	}
	for _, c := range cases {
		t.Run(c.db+"/"+c.name, func(t *testing.T) { checkRender(t, openDry(t, c.db), c.query, c.want) })
	}
}

// TestOracleAggregateRefused: Oracle cannot lock the rows of a DISTINCT,
// GROUP BY or aggregate query (ORA-01786); lockplugin refuses it before
// sending. The same queries are sent on PostgreSQL's shapes elsewhere.
func TestOracleAggregateRefused(t *testing.T) {
	lock := lockplugin.ForUpdate()
	const refused = "error: Oracle (ORA-01786"
	cases := []struct {
		name  string
		query func(db *gorm.DB) *gorm.DB
		want  string
	}{
		{"Count", func(db *gorm.DB) *gorm.DB {
			var n int64
			return db.Model(&lkJob{}).Clauses(lock).Count(&n)
		}, "error: FOR UPDATE on a query with an aggregate function or DISTINCT in its select list is not supported on Oracle (ORA-01786"},
		{"Distinct", func(db *gorm.DB) *gorm.DB {
			var s []string
			return db.Model(&lkJob{}).Clauses(lock).Distinct("state").Find(&s)
		}, "error: FOR UPDATE on a query with DISTINCT is not supported on Oracle (ORA-01786"},
		{"Group", func(db *gorm.DB) *gorm.DB {
			var s []string
			return db.Model(&lkJob{}).Clauses(lock).Select("state").Group("state").Find(&s)
		}, "error: FOR UPDATE on a query with GROUP BY is not supported on Oracle"},
		{"Select SUM", func(db *gorm.DB) *gorm.DB {
			var n []int64
			return db.Model(&lkJob{}).Clauses(lock).Select("SUM(company_id)").Find(&n)
		}, refused},
		{"Select max column list", func(db *gorm.DB) *gorm.DB {
			var n []int64
			return db.Model(&lkJob{}).Clauses(lock).Select("state", "max(id)").Find(&n)
		}, refused},
		{"plain rows", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lock).Select("id", "state").Where("state = ?", "queued").Find(&jobs)
		}, `SELECT "id","state" FROM "lk_jobs" WHERE state = :1 FOR UPDATE`},
		{"a column named like a function", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lock).Select("counter", "summary").Find(&jobs)
		}, `SELECT counter,summary FROM "lk_jobs" FOR UPDATE`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if want == refused {
				want = "error: is not supported on Oracle (ORA-01786"
			}
			checkRender(t, openDry(t, "oracle"), c.query, want)
		})
	}
}

// stmtDriver is a database/sql driver that answers the few statements a
// setting-style wait sends; any other query gets no rows, or fail when it
// contains failOn. Its pool (stmtDB) records every statement, with its
// arguments, and BEGIN, COMMIT and ROLLBACK, through driverhook.
type stmtDriver struct {
	mu     sync.Mutex
	sent   []string
	failOn string
	fail   error
}

func (d *stmtDriver) Connect(context.Context) (driver.Conn, error) { return stmtConn{d}, nil }
func (d *stmtDriver) Driver() driver.Driver                        { return nil }

func (d *stmtDriver) record(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sent = append(d.sent, s)
}

func (d *stmtDriver) statements() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.sent...)
}

// recording is the connector stmtDB opens: d, recording what reaches it.
func (d *stmtDriver) recording() driver.Connector {
	return driverhook.Wrap(d, driverhook.Hooks{
		BeforeStatement: func(_ context.Context, q string, args []driver.NamedValue) error {
			d.record(q + namedArgs(args))
			return nil
		},
		OnBegin:    func() { d.record("BEGIN") },
		OnCommit:   func() { d.record("COMMIT") },
		OnRollback: func() { d.record("ROLLBACK") },
	})
}

type stmtConn struct{ d *stmtDriver }

func (c stmtConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("stmtDriver: no Prepare")
}
func (c stmtConn) Close() error              { return nil }
func (c stmtConn) Begin() (driver.Tx, error) { return stmtTx(c), nil }

func (c stmtConn) QueryContext(_ context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	switch {
	case c.d.failOn != "" && strings.Contains(q, c.d.failOn):
		return nil, c.d.fail
	case strings.Contains(q, "@@SESSION.innodb_lock_wait_timeout"):
		return &stmtRows{cols: []string{"a", "b"}, rows: [][]driver.Value{{int64(50), int64(31536000)}}}, nil
	case strings.Contains(q, "@@LOCK_TIMEOUT"):
		return &stmtRows{cols: []string{""}, rows: [][]driver.Value{{int64(-1)}}}, nil
	case strings.Contains(q, "current_setting('lock_timeout')"):
		return &stmtRows{cols: []string{"current_setting", "set_config"}, rows: [][]driver.Value{{"0", "300ms"}}}, nil
	case strings.Contains(q, "set_config"):
		return &stmtRows{cols: []string{"set_config"}, rows: [][]driver.Value{{"0"}}}, nil
	}
	return &stmtRows{cols: []string{"id", "state"}}, nil
}

func (c stmtConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(0), nil
}

type stmtTx stmtConn

func (t stmtTx) Commit() error   { return nil }
func (t stmtTx) Rollback() error { return nil }

func namedArgs(args []driver.NamedValue) string {
	if len(args) == 0 {
		return ""
	}
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = fmt.Sprint(a.Value)
	}
	return " [" + strings.Join(s, " ") + "]"
}

type stmtRows struct {
	cols []string
	rows [][]driver.Value
	i    int
}

func (r *stmtRows) Columns() []string { return r.cols }
func (r *stmtRows) Close() error      { return nil }
func (r *stmtRows) Next(dest []driver.Value) error {
	if r.i >= len(r.rows) {
		return io.EOF
	}
	copy(dest, r.rows[r.i])
	r.i++
	return nil
}

// stmtDB opens GORM's real PostgreSQL or SQL Server dialector over a
// stmtDriver, with lockplugin registered.
func stmtDB(t *testing.T, kind string, d *stmtDriver, opts ...lockplugin.Option) *gorm.DB {
	t.Helper()
	pool := sql.OpenDB(d.recording())
	t.Cleanup(func() { _ = pool.Close() })
	var dl gorm.Dialector
	switch kind {
	case "postgres":
		dl = postgres.New(postgres.Config{Conn: pool})
	case "sqlserver":
		dl = sqlserver.New(sqlserver.Config{Conn: pool})
	case "mysql":
		dl = mysqldialect.New(mysqldialect.Config{Conn: pool, SkipInitializeWithVersion: true, ServerVersion: "8.0.36"})
	}
	db, err := gorm.Open(dl, &gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true, SkipDefaultTransaction: true})
	if err != nil {
		t.Fatal(err)
	}
	if kind == "postgres" {
		// The recording pool answers nothing, so the version query
		// dialects.Of sends once per pool is answered here; it is not what
		// these tests pin.
		dialects.AssumeServerVersion(db, "PostgreSQL 16.4")
		t.Cleanup(func() { dialects.Forget(db) })
	}
	if err := db.Use(lockplugin.New(opts...)); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestWaitStatements: the exact statements a setting-style wait sends
// around the query, through GORM's real dialectors (live on PostgreSQL in
// TestWaitAtMostLive, and on SQL Server there where LOCKPLUGIN_SQLSERVER_DSN
// is set), and its refusal with Row and Rows.
func TestWaitStatements(t *testing.T) {
	cases := []struct {
		kind string
		lock lockplugin.LockOption
		want []string
	}{
		{"postgres", lockplugin.WaitAtMost(300 * time.Millisecond), []string{
			"BEGIN",
			"SELECT prev.v, set_config('lock_timeout', $1, true) FROM (SELECT current_setting('lock_timeout') AS v OFFSET 0) AS prev [300ms]",
			`SELECT * FROM "lk_jobs" WHERE state = $1 FOR UPDATE [queued]`,
			"SELECT set_config('lock_timeout', $1, true) [0]",
			"COMMIT",
		}},
		{"postgres", lockplugin.WaitAtMost(1500 * time.Microsecond), []string{
			"BEGIN",
			"SELECT prev.v, set_config('lock_timeout', $1, true) FROM (SELECT current_setting('lock_timeout') AS v OFFSET 0) AS prev [2ms]",
			`SELECT * FROM "lk_jobs" WHERE state = $1 FOR UPDATE [queued]`,
			"SELECT set_config('lock_timeout', $1, true) [0]",
			"COMMIT",
		}},
		{"mysql", lockplugin.WaitAtMost(1500 * time.Millisecond), []string{
			"BEGIN",
			"SELECT @@SESSION.innodb_lock_wait_timeout, @@SESSION.lock_wait_timeout",
			"SET SESSION innodb_lock_wait_timeout = 2, lock_wait_timeout = 2",
			"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE [queued]",
			"SET SESSION innodb_lock_wait_timeout = 50, lock_wait_timeout = 31536000",
			"COMMIT",
		}},
		{"sqlserver", lockplugin.WaitAtMost(2 * time.Second), []string{
			"BEGIN",
			"DECLARE @lockplugin_prev int = @@LOCK_TIMEOUT; SET LOCK_TIMEOUT 2000; SELECT @lockplugin_prev",
			`SELECT * FROM "lk_jobs" WITH (XLOCK, ROWLOCK) WHERE state = @p1 [queued]`,
			"SET LOCK_TIMEOUT -1",
			"COMMIT",
		}},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			d := &stmtDriver{}
			db := stmtDB(t, c.kind, d)
			err := db.Transaction(func(tx *gorm.DB) error {
				var jobs []lkJob
				return tx.Clauses(lockplugin.ForUpdate(c.lock)).Where("state = ?", "queued").Find(&jobs).Error
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := d.statements(); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("statements\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(c.want, "\n      "))
			}
		})
	}

	t.Run("SQL Server restores after a failed query", func(t *testing.T) {
		d := &stmtDriver{failOn: "lk_jobs", fail: mssql.Error{Number: 1222, Message: "Lock request time out period exceeded."}}
		db := stmtDB(t, "sqlserver", d)
		var jobs []lkJob
		err := db.Transaction(func(tx *gorm.DB) error {
			return tx.Clauses(lockplugin.ForUpdate(lockplugin.WaitAtMost(time.Second))).Find(&jobs).Error
		})
		var me mssql.Error
		if !errors.Is(err, lockplugin.ErrLockNotAvailable) || !errors.As(err, &me) {
			t.Fatalf("want ErrLockNotAvailable wrapping the driver's 1222, got %v", err)
		}
		got := d.statements()
		if len(got) != 5 || got[3] != "SET LOCK_TIMEOUT -1" || got[4] != "ROLLBACK" {
			t.Fatalf("statements %q", got)
		}
	})

	for _, kind := range []string{"postgres", "sqlserver", "mysql"} {
		t.Run(kind+" outside a transaction refused", func(t *testing.T) {
			d := &stmtDriver{}
			db := stmtDB(t, kind, d, lockplugin.AllowLocksOutsideTransaction())
			var jobs []lkJob
			err := db.Clauses(lockplugin.ForUpdate(lockplugin.WaitAtMost(time.Second))).Find(&jobs).Error
			if !errors.Is(err, lockplugin.ErrUnsupported) || !strings.Contains(err.Error(), "outside a transaction") {
				t.Fatalf("want ErrUnsupported, got %v", err)
			}
			if got := d.statements(); len(got) != 0 {
				t.Fatalf("statements %q; want none", got)
			}
		})
		t.Run(kind+" Row and Rows refused", func(t *testing.T) {
			d := &stmtDriver{}
			db := stmtDB(t, kind, d)
			err := db.Transaction(func(tx *gorm.DB) error {
				rows, err := tx.Model(&lkJob{}).Clauses(lockplugin.ForUpdate(lockplugin.WaitAtMost(time.Second))).Rows()
				if err == nil {
					_ = rows.Close()
				}
				return err
			})
			if !errors.Is(err, lockplugin.ErrUnsupported) || !strings.Contains(err.Error(), "with Row or Rows") {
				t.Fatalf("want ErrUnsupported, got %v", err)
			}
			if got := d.statements(); len(got) != 2 || got[0] != "BEGIN" || got[1] != "ROLLBACK" {
				t.Fatalf("statements %q; want only BEGIN and ROLLBACK", got)
			}
		})
	}
}

// TestSQLServerReadPastRefused: error 650 (READPAST at an isolation level
// that refuses it) comes back as ErrUnsupported that says what to do, with
// the driver's error still reachable.
func TestSQLServerReadPastRefused(t *testing.T) {
	d := &stmtDriver{failOn: "READPAST", fail: mssql.Error{Number: 650, Message: "You can only specify the READPAST lock in the READ COMMITTED or REPEATABLE READ isolation levels."}}
	db := stmtDB(t, "sqlserver", d)
	var jobs []lkJob
	err := db.Transaction(func(tx *gorm.DB) error {
		return tx.Clauses(lockplugin.ForUpdate(lockplugin.SkipLocked)).Find(&jobs).Error
	})
	var me mssql.Error
	if !errors.Is(err, lockplugin.ErrUnsupported) || !errors.As(err, &me) || me.Number != 650 || !strings.Contains(err.Error(), "READ COMMITTED or REPEATABLE READ") {
		t.Fatalf("want ErrUnsupported wrapping error 650, got %v", err)
	}
	// Without SkipLocked a 650 (impossible there) is left alone.
	if errors.Is(db.Transaction(func(tx *gorm.DB) error {
		return tx.Clauses(lockplugin.ForUpdate()).Find(&jobs).Error
	}), lockplugin.ErrUnsupported) {
		t.Fatal("a lock without SkipLocked was classified as a READPAST refusal")
	}
}
