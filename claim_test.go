package lockplugin_test

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

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

// claimJob is the model of the claim tests.
type claimJob struct {
	ID       int64
	State    string
	Worker   int
	Attempts int
}

func (claimJob) TableName() string { return "jobs" }

// recorder is a database/sql connector that records every statement and
// answers queries with canned rows: the claim's exact SQL, on databases
// that cannot run here (SQL Server, Oracle), and the round trips it takes.
type recorder struct {
	mu   sync.Mutex
	log  []string
	rows [][]driver.Value // answered to every query
	// fail, when set, decides the error of each statement (and of
	// "COMMIT") after it is recorded: the reply lost after the send.
	fail func(stmt string) error
}

func (r *recorder) failure(s string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail == nil {
		return nil
	}
	return r.fail(s)
}

func (r *recorder) record(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *recorder) statements() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

func (r *recorder) Connect(context.Context) (driver.Conn, error) { return recConn{r}, nil }
func (r *recorder) Driver() driver.Driver                        { return recDriver{r} }

type recDriver struct{ r *recorder }

func (d recDriver) Open(string) (driver.Conn, error) { return recConn(d), nil }

type recConn struct{ r *recorder }

func (c recConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("recorder: no Prepare") }
func (c recConn) Close() error                        { return nil }
func (c recConn) Begin() (driver.Tx, error)           { c.r.record("BEGIN"); return recTx(c), nil }

// BeginTx records the isolation level as go-sql-driver/mysql sends it.
func (c recConn) BeginTx(_ context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if sql.IsolationLevel(opts.Isolation) != sql.LevelDefault {
		c.r.record("SET TRANSACTION ISOLATION LEVEL " + strings.ToUpper(sql.IsolationLevel(opts.Isolation).String()))
	}
	return c.Begin()
}

func (c recConn) QueryContext(_ context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.r.record(q + args2s(args))
	if err := c.r.failure(q); err != nil {
		return nil, err
	}
	return &recRows{rows: c.r.rows}, nil
}

func (c recConn) ExecContext(_ context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.r.record(q + args2s(args))
	if err := c.r.failure(q); err != nil {
		return nil, err
	}
	return driver.RowsAffected(len(c.r.rows)), nil
}

type recTx recConn

func (t recTx) Commit() error   { t.r.record("COMMIT"); return t.r.failure("COMMIT") }
func (t recTx) Rollback() error { t.r.record("ROLLBACK"); return nil }

func args2s(args []driver.NamedValue) string {
	if len(args) == 0 {
		return ""
	}
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = fmt.Sprint(a.Value)
	}
	return " [" + strings.Join(s, " ") + "]"
}

type recRows struct {
	rows [][]driver.Value
	i    int
}

func (r *recRows) Columns() []string { return []string{"id", "state", "worker", "attempts"} }
func (r *recRows) Close() error      { return nil }
func (r *recRows) Next(dest []driver.Value) error {
	if r.i >= len(r.rows) {
		return io.EOF
	}
	copy(dest, r.rows[r.i])
	r.i++
	return nil
}

// testHelper is the part of testing.TB that claimDB needs, so that the
// examples can use it too.
type testHelper interface {
	Helper()
	Cleanup(func())
	Fatal(args ...any)
}

// exampleT is a testHelper for examples: Fatal panics, cleanup runs the
// Cleanup functions.
type exampleT struct{ done []func() }

func (*exampleT) Helper()            {}
func (e *exampleT) Cleanup(f func()) { e.done = append(e.done, f) }
func (*exampleT) Fatal(args ...any)  { panic(fmt.Sprint(args...)) }
func (e *exampleT) cleanup() {
	for i := len(e.done) - 1; i >= 0; i-- {
		e.done[i]()
	}
}

// claimDB opens the stand-in dialector name (version for MySQL) over a
// recorder answering rows, with lockplugin registered.
func claimDB(t testHelper, name, version string, rows [][]driver.Value) (*gorm.DB, *recorder) {
	t.Helper()
	rec := &recorder{rows: rows}
	pool := sql.OpenDB(rec)
	t.Cleanup(func() { _ = pool.Close() })
	db, err := gorm.Open(&dryrun.Dialector{DialectorName: name, ServerVersion: version}, &gorm.Config{
		ConnPool: pool, SkipDefaultTransaction: true, DisableAutomaticPing: true, Logger: logger.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	if version == "" {
		// What the server would answer to the version query that
		// dialects.Of sends once per pool; the recorder answers only
		// the statements under test.
		dialects.AssumeServerVersion(db, "PostgreSQL 16.4")
		t.Cleanup(func() { dialects.Forget(db) })
	}
	if err := db.Use(lockplugin.New()); err != nil {
		t.Fatal(err)
	}
	return db, rec
}

var (
	queued   = clause.Eq{Column: clause.Column{Name: "state"}, Value: "queued"}
	twoRows  = [][]driver.Value{{int64(1), "running", int64(7), int64(1)}, {int64(2), "running", int64(7), int64(1)}}
	setPlain = map[string]any{"state": "running", "Worker": 7}
	setExpr  = map[string]any{"state": "running", "worker": 7, "attempts": gorm.Expr("attempts + ?", 1)}
)

// TestClaimSQL: the exact statements Claim sends on each database, and so
// its round trips: one statement on PostgreSQL, SQLite and SQL Server; a
// locking SELECT and an UPDATE in one transaction on MySQL, MariaDB and
// Oracle (plus a read-back when set holds an expression).
func TestClaimSQL(t *testing.T) {
	cases := []struct {
		name, version string
		set           map[string]any
		want          []string
	}{
		{"postgres", "", setExpr, []string{
			`UPDATE "jobs" SET "attempts"=attempts + $1,"state"=$2,"worker"=$3 FROM (SELECT "id" FROM "jobs" WHERE ("state" = $4) ORDER BY "id" LIMIT $5 FOR UPDATE SKIP LOCKED) AS "lockplugin_claimed" WHERE "jobs"."id" = "lockplugin_claimed"."id" RETURNING "jobs".* [1 running 7 queued 10]`,
		}},
		{"sqlite", "", setPlain, []string{
			`UPDATE "jobs" SET "state"=?,"worker"=? WHERE "id" IN (SELECT "id" FROM "jobs" WHERE ("state" = ?) ORDER BY "id" LIMIT ?) RETURNING * [running 7 queued 10]`,
		}},
		{"sqlserver", "", setExpr, []string{
			`UPDATE TOP (@p1) [jobs] WITH (UPDLOCK, READPAST, ROWLOCK) SET [attempts]=attempts + @p2,[state]=@p3,[worker]=@p4 OUTPUT INSERTED.* WHERE ([state] = @p5) [10 1 running 7 queued]`,
		}},
		{"mysql", "8.0.36", setPlain, []string{
			"SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
			"BEGIN",
			"SELECT * FROM `jobs` WHERE `state` = ? ORDER BY `id` LIMIT ? FOR UPDATE SKIP LOCKED [queued 10]",
			"UPDATE `jobs` SET `state`=?,`worker`=? WHERE `id` IN (?,?) [running 7 1 2]",
			"COMMIT",
		}},
		{"mysql", "10.11.6-MariaDB", setExpr, []string{
			"SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
			"BEGIN",
			"SELECT * FROM `jobs` WHERE `state` = ? ORDER BY `id` LIMIT ? FOR UPDATE SKIP LOCKED [queued 10]",
			"UPDATE `jobs` SET `attempts`=attempts + ?,`state`=?,`worker`=? WHERE `id` IN (?,?) [1 running 7 1 2]",
			"SELECT * FROM `jobs` WHERE `id` IN (?,?) ORDER BY `id` [1 2]",
			"COMMIT",
		}},
		{"oracle", "", setPlain, []string{
			"BEGIN",
			`SELECT * FROM "jobs" WHERE "state" = :1 FOR UPDATE SKIP LOCKED [queued]`,
			`UPDATE "jobs" SET "state"=:1,"worker"=:2 WHERE "id" IN (:3,:4) [running 7 1 2]`,
			"COMMIT",
		}},
	}
	for _, c := range cases {
		t.Run(c.name+c.version, func(t *testing.T) {
			db, rec := claimDB(t, c.name, c.version, twoRows)
			jobs, err := lockplugin.Claim[claimJob](context.Background(), db, 10, queued, c.set)
			if err != nil {
				t.Fatal(err)
			}
			if got := rec.statements(); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("statements\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(c.want, "\n      "))
			}
			if len(jobs) != 2 || jobs[0].ID != 1 || jobs[1].ID != 2 || jobs[0].State != "running" || jobs[1].Worker != 7 {
				t.Fatalf("claimed %+v", jobs)
			}
		})
	}

	t.Run("Oracle reads n rows of the cursor", func(t *testing.T) {
		db, rec := claimDB(t, "oracle", "", twoRows)
		jobs, err := lockplugin.Claim[claimJob](context.Background(), db, 1, nil, setPlain)
		if err != nil || len(jobs) != 1 || jobs[0].ID != 1 {
			t.Fatalf("claimed %+v, %v", jobs, err)
		}
		if got := rec.statements(); len(got) != 4 || got[1] != `SELECT * FROM "jobs" FOR UPDATE SKIP LOCKED` || !strings.HasSuffix(got[2], `WHERE "id" = :3 [running 7 1]`) {
			t.Fatalf("statements %q", got)
		}
	})

	t.Run("inside a caller's transaction", func(t *testing.T) {
		db, rec := claimDB(t, "mysql", "8.0.36", twoRows)
		err := db.Transaction(func(tx *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](context.Background(), tx, 10, queued, setPlain)
			return err
		})
		if got := rec.statements(); err != nil || len(got) != 4 || got[0] != "BEGIN" || got[3] != "COMMIT" {
			t.Fatalf("one transaction, the caller's: %q, %v", got, err)
		}
	})

	t.Run("db.Table and soft delete", func(t *testing.T) {
		type softJob struct {
			ID        int64
			State     string
			DeletedAt gorm.DeletedAt
		}
		db, rec := claimDB(t, "postgres", "", nil)
		if _, err := lockplugin.Claim[softJob](context.Background(), db.Table("jobs_eu"), 5, nil, map[string]any{"state": "running"}); err != nil {
			t.Fatal(err)
		}
		want := `UPDATE "jobs_eu" SET "state"=$1 FROM (SELECT "id" FROM "jobs_eu" WHERE ("jobs_eu"."deleted_at" IS NULL) ORDER BY "id" LIMIT $2 FOR UPDATE SKIP LOCKED) AS "lockplugin_claimed" WHERE "jobs_eu"."id" = "lockplugin_claimed"."id" RETURNING "jobs_eu".* [running 5]`
		if got := rec.statements(); len(got) != 1 || got[0] != want {
			t.Fatalf("statements\n got: %q\nwant: %q", got, want)
		}
		// Unscoped claims soft-deleted rows too.
		if _, err := lockplugin.Claim[softJob](context.Background(), db.Unscoped(), 5, nil, map[string]any{"state": "running"}); err != nil {
			t.Fatal(err)
		}
		if got := rec.statements(); len(got) != 2 || strings.Contains(got[1], "deleted_at") {
			t.Fatalf("Unscoped: %q", got)
		}
	})
}

// TestClaimRefused: arguments no database could run, and databases that
// cannot claim, fail before any SQL is sent.
func TestClaimRefused(t *testing.T) {
	type twoKeys struct {
		A, B  int64 `gorm:"primaryKey"`
		State string
	}
	type oddTable struct {
		ID    int64
		State string
	}
	cases := []struct {
		name, version string
		run           func(db *gorm.DB) error
		want          error
		text          string
	}{
		{"postgres", "", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](context.Background(), db, 0, nil, setPlain)
			return err
		},
			lockplugin.ErrInvalidClaim, "n is 0"},
		{"postgres", "", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](context.Background(), db, 1, nil, nil)
			return err
		},
			lockplugin.ErrInvalidClaim, "set is empty"},
		{"postgres", "", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](context.Background(), db, 1, nil, map[string]any{"state; DROP TABLE jobs": 1})
			return err
		}, lockplugin.ErrInvalidClaim, "has no column"},
		{"postgres", "", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](context.Background(), db, 1, nil, map[string]any{"state": "a", "State": "b"})
			return err
		}, lockplugin.ErrInvalidClaim, "set twice"},
		{"postgres", "", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[twoKeys](context.Background(), db, 1, nil, map[string]any{"state": "x"})
			return err
		}, lockplugin.ErrInvalidClaim, "2 primary key columns"},
		{"postgres", "", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[oddTable](context.Background(), db.Table("jobs-eu"), 1, nil, map[string]any{"state": "x"})
			return err
		}, lockplugin.ErrInvalidClaim, "not a plain identifier"},
		{"postgres", "", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[oddTable](context.Background(), db.Table("jobs j"), 1, nil, map[string]any{"state": "x"})
			return err
		}, lockplugin.ErrInvalidClaim, "not one plain table name"},
		{"postgres", "", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](context.Background(), db.Where("queue = ?", "emails"), 1, nil, setPlain)
			return err
		}, lockplugin.ErrInvalidClaim, "db carries WHERE of its own"},
		{"postgres", "", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](context.Background(), db.Joins("JOIN queues q ON q.id = jobs.queue_id").Select("jobs.*"), 1, nil, setPlain)
			return err
		}, lockplugin.ErrInvalidClaim, "db carries JOIN, Select/Omit of its own"},
		{"mysql", "5.7.44", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](context.Background(), db, 1, nil, setPlain)
			return err
		},
			lockplugin.ErrUnsupported, "queue claim is not supported on MySQL 5.7.44 (needs MySQL 8.0.1 or later)"},
		{"mysql", "10.5.23-MariaDB", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](context.Background(), db, 1, nil, setPlain)
			return err
		},
			lockplugin.ErrUnsupported, "needs MariaDB 10.6.0 or later"},
		{"mysql", "8.0.11-TiDB-v8.4.0", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](context.Background(), db, 1, nil, setPlain)
			return err
		},
			lockplugin.ErrUnsupported, "queue claim is not supported on TiDB 8.4.0 (Claim needs SKIP LOCKED, which TiDB ignores"},
		{"clickhouse", "", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](context.Background(), db, 1, nil, setPlain)
			return err
		},
			lockplugin.ErrUnsupported, "unknown dialect"},
	}
	for _, c := range cases {
		t.Run(c.name+c.version+"/"+c.text, func(t *testing.T) {
			db, rec := claimDB(t, c.name, c.version, nil)
			err := c.run(db)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("want %v containing %q, got %v", c.want, c.text, err)
			}
			if got := rec.statements(); len(got) != 0 {
				t.Fatalf("sent %q", got)
			}
		})
	}
	t.Run("not registered", func(t *testing.T) {
		db, err := gorm.Open(&dryrun.Dialector{DialectorName: "postgres"}, &gorm.Config{Logger: logger.Discard, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lockplugin.Claim[claimJob](context.Background(), db, 1, nil, setPlain); !errors.Is(err, lockplugin.ErrNotRegistered) {
			t.Fatalf("want ErrNotRegistered, got %v", err)
		}
	})
	t.Run("a cancelled context", func(t *testing.T) {
		db, rec := claimDB(t, "postgres", "", nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := lockplugin.Claim[claimJob](ctx, db, 1, nil, setPlain); !errors.Is(err, context.Canceled) {
			t.Fatalf("want context.Canceled, got %v", err)
		}
		if got := rec.statements(); len(got) != 0 {
			t.Fatalf("sent %q", got)
		}
	})
}

// ptrJob is claimed as Claim[*ptrJob].
type ptrJob struct {
	ID       int64
	State    string
	Worker   int
	Attempts int
}

func (*ptrJob) TableName() string { return "jobs" }

// TestClaimPointerElements: Claim[*T] claims and returns the rows on
// every code path (one statement, fast or GORM scanning; the locked
// transaction, with and without a read-back); element types that are no
// model are refused with nothing sent.
func TestClaimPointerElements(t *testing.T) {
	for _, c := range []struct{ name, version string }{{"postgres", ""}, {"sqlite", ""}, {"mysql", "8.0.36"}, {"oracle", ""}} {
		for _, set := range []map[string]any{setPlain, setExpr} {
			db, _ := claimDB(t, c.name, c.version, twoRows)
			jobs, err := lockplugin.Claim[*ptrJob](context.Background(), db, 10, queued, set)
			if err != nil || len(jobs) != 2 || jobs[0] == nil || jobs[1] == nil || jobs[0].ID != 1 || jobs[1].ID != 2 || jobs[0].State != "running" {
				t.Fatalf("%s: Claim[*T]: %+v, %v", c.name, jobs, err)
			}
		}
	}
	db, rec := claimDB(t, "postgres", "", twoRows)
	if _, err := lockplugin.Claim[**ptrJob](context.Background(), db, 10, queued, setPlain); !errors.Is(err, lockplugin.ErrInvalidClaim) {
		t.Fatalf("Claim[**T]: %v, want ErrInvalidClaim", err)
	}
	if _, err := lockplugin.Claim[map[string]any](context.Background(), db, 10, queued, setPlain); !errors.Is(err, lockplugin.ErrInvalidClaim) {
		t.Fatalf("Claim[map]: %v, want ErrInvalidClaim", err)
	}
	if got := rec.statements(); len(got) != 0 {
		t.Fatalf("refused claims sent %q", got)
	}
}

// TestClaimOutcomeUnknown: a claim whose reply is lost is sent once (not
// retried on another connection, even when the driver says ErrBadConn, as
// pgx does for a lost reply in simple protocol) and reported as outcome
// unknown; on the MySQL family a failure before COMMIT claimed nothing
// and is returned as it is, and a failed COMMIT is outcome unknown.
func TestClaimOutcomeUnknown(t *testing.T) {
	lost := []error{io.ErrUnexpectedEOF, driver.ErrBadConn, context.DeadlineExceeded}
	for _, cause := range lost {
		for _, name := range []string{"postgres", "sqlserver"} {
			db, rec := claimDB(t, name, "", twoRows)
			rec.fail = func(string) error { return cause }
			jobs, err := lockplugin.Claim[claimJob](context.Background(), db, 10, queued, setPlain)
			if !errors.Is(err, lockplugin.ErrClaimOutcomeUnknown) || !errors.Is(err, cause) || jobs != nil {
				t.Fatalf("%s, %v: got %v, %v; want ErrClaimOutcomeUnknown wrapping the cause", name, cause, jobs, err)
			}
			if got := rec.statements(); len(got) != 1 {
				t.Fatalf("%s, %v: sent %d statements, want 1 (no retry): %q", name, cause, len(got), got)
			}
		}
	}
	t.Run("mysql, lost reply before COMMIT", func(t *testing.T) {
		db, rec := claimDB(t, "mysql", "8.0.36", twoRows)
		rec.fail = func(s string) error {
			if strings.HasPrefix(s, "UPDATE") {
				return io.ErrUnexpectedEOF
			}
			return nil
		}
		_, err := lockplugin.Claim[claimJob](context.Background(), db, 10, queued, setPlain)
		if err == nil || errors.Is(err, lockplugin.ErrClaimOutcomeUnknown) {
			t.Fatalf("got %v; want the plain error: nothing was committed", err)
		}
		if got := rec.statements(); got[len(got)-1] != "ROLLBACK" {
			t.Fatalf("statements %q; want a ROLLBACK last", got)
		}
	})
	t.Run("mysql, lost reply to COMMIT", func(t *testing.T) {
		db, rec := claimDB(t, "mysql", "10.11.6-MariaDB", twoRows)
		rec.fail = func(s string) error {
			if s == "COMMIT" {
				return io.ErrUnexpectedEOF
			}
			return nil
		}
		_, err := lockplugin.Claim[claimJob](context.Background(), db, 10, queued, setPlain)
		if !errors.Is(err, lockplugin.ErrClaimOutcomeUnknown) {
			t.Fatalf("got %v; want ErrClaimOutcomeUnknown", err)
		}
		n := 0
		for _, s := range rec.statements() {
			if s == "COMMIT" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d COMMITs, want 1: %q", n, rec.statements())
		}
	})
}

// stampedJob has the claimed-at column Reclaim goes by.
type stampedJob struct {
	ID        int64
	State     string
	ClaimedAt time.Time
	DeletedAt gorm.DeletedAt
}

func (stampedJob) TableName() string { return "jobs" }

// TestReclaimSQL: Reclaim is one UPDATE of the claimed rows whose claim
// is older than the timeout, the cut-off bound; bad arguments are refused
// before any SQL.
func TestReclaimSQL(t *testing.T) {
	db, rec := claimDB(t, "postgres", "", nil)
	running := clause.Eq{Column: clause.Column{Name: "state"}, Value: "running"}
	before := time.Now()
	if _, err := lockplugin.Reclaim[*stampedJob](context.Background(), db, running, "ClaimedAt", time.Minute, map[string]any{"state": "queued"}); err != nil {
		t.Fatal(err)
	}
	got := rec.statements()
	prefix := `UPDATE "jobs" SET "state"=$1 WHERE "state" = $2 AND "claimed_at" < $3 AND "jobs"."deleted_at" IS NULL [queued running `
	if len(got) != 1 || !strings.HasPrefix(got[0], prefix) {
		t.Fatalf("statements %q\nwant one starting %q", got, prefix)
	}
	cut, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", strings.TrimSuffix(strings.TrimPrefix(got[0], prefix), "]"))
	if err != nil {
		t.Fatal(err)
	}
	if d := before.Round(0).Sub(cut); d > time.Minute || d < time.Minute-5*time.Second {
		t.Fatalf("cut-off %v is %v before the call, want a minute", cut, d)
	}
	for _, c := range []struct {
		where   clause.Expression
		col     string
		timeout time.Duration
		set     map[string]any
		text    string
	}{
		{nil, "claimed_at", time.Minute, map[string]any{"state": "queued"}, "needs a where"},
		{running, "claimed_at", 0, map[string]any{"state": "queued"}, "timeout is 0s"},
		{running, "started", time.Minute, map[string]any{"state": "queued"}, `no column "started"`},
		{running, "claimed_at", time.Minute, nil, "set is empty"},
	} {
		_, err := lockplugin.Reclaim[stampedJob](context.Background(), db, c.where, c.col, c.timeout, c.set)
		if !errors.Is(err, lockplugin.ErrInvalidClaim) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("want ErrInvalidClaim with %q, got %v", c.text, err)
		}
	}
	if got := rec.statements(); len(got) != 1 {
		t.Fatalf("refused calls sent %q", got[1:])
	}
}
