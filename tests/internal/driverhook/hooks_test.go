package driverhook

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
)

// oldDriver has only the pre-context interfaces: no Execer, Queryer,
// ConnPrepareContext, ConnBeginTx or statement contexts, so everything
// goes through Prepare and Begin. It logs what reaches it.
type oldDriver struct {
	mu  sync.Mutex
	log []string
	// closed counts closed rows.
	closed int
}

func (d *oldDriver) add(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log = append(d.log, s)
}

func (d *oldDriver) Open(string) (driver.Conn, error) { return oldConn{d}, nil }

type oldConn struct{ d *oldDriver }

func (c oldConn) Prepare(q string) (driver.Stmt, error) {
	c.d.add("prepare " + q)
	return oldStmt(c), nil
}
func (c oldConn) Close() error              { return nil }
func (c oldConn) Begin() (driver.Tx, error) { c.d.add("begin"); return oldTx(c), nil }

type oldStmt struct{ d *oldDriver }

func (s oldStmt) Close() error  { return nil }
func (s oldStmt) NumInput() int { return -1 }
func (s oldStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.d.add("exec")
	return driver.RowsAffected(1), nil
}
func (s oldStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.d.add("query")
	return &oneRow{d: s.d}, nil
}

type oldTx struct{ d *oldDriver }

func (t oldTx) Commit() error   { t.d.add("commit"); return nil }
func (t oldTx) Rollback() error { t.d.add("rollback"); return nil }

type oneRow struct {
	d    *oldDriver
	done bool
}

func (r *oneRow) Columns() []string { return []string{"n"} }
func (r *oneRow) Close() error {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	r.d.closed++
	return nil
}
func (r *oneRow) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}

// The hooks run once per statement and transaction step on a driver with
// only the old interfaces, in order, around what the driver saw; Rewrite's
// text is what is prepared; an AfterStatement error on a query that
// succeeded reaches the caller, and its rows are closed.
func TestHooksOnOldDriver(t *testing.T) {
	d := &oldDriver{}
	var mu sync.Mutex
	var seen []string
	see := func(s string) { mu.Lock(); defer mu.Unlock(); seen = append(seen, s) }
	refuse := errors.New("refused after the query")
	db := sql.OpenDB(Wrap(DSNConnector(d, ""), Hooks{
		Rewrite: func(q string) string { return strings.ReplaceAll(q, "old", "new") },
		BeforeStatement: func(_ context.Context, q string, args []driver.NamedValue) error {
			see("before " + q)
			return nil
		},
		AfterStatement: func(_ context.Context, q string, err error) error {
			see("after " + q)
			if strings.Contains(q, "refuse") {
				return refuse
			}
			return err
		},
		OnPrepare:  func(q string) { see("prepared " + q) },
		OnBegin:    func() { see("began") },
		OnCommit:   func() { see("committing") },
		OnRollback: func() { see("rolling back") },
	}))
	defer db.Close()
	ctx := context.Background()

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE old SET n = ?", 1); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT old").Scan(&n); err != nil || n != 1 {
		t.Fatalf("got %d, %v", n, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.QueryContext(ctx, "SELECT refuse"); !errors.Is(err, refuse) {
		t.Fatalf("want the AfterStatement error, got %v", err)
	}
	if _, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("a read-only transaction on a driver without BeginTx: %v", err)
	}
	if _, err := db.ExecContext(ctx, "UPDATE old SET n = @n", sql.Named("n", 1)); err == nil {
		t.Fatal("a named argument reached a driver that takes none")
	}

	want := []string{
		"began",
		"prepared UPDATE new SET n = ?", "before UPDATE new SET n = ?", "after UPDATE new SET n = ?",
		"prepared SELECT new", "before SELECT new", "after SELECT new",
		"committing",
		"prepared SELECT refuse", "before SELECT refuse", "after SELECT refuse",
		"prepared UPDATE new SET n = @n",
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("hooks\n got: %q\nwant: %q", seen, want)
	}
	wantLog := []string{"begin", "prepare UPDATE new SET n = ?", "exec", "prepare SELECT new", "query", "commit", "prepare SELECT refuse", "query", "prepare UPDATE new SET n = @n"}
	if strings.Join(d.log, "\n") != strings.Join(wantLog, "\n") {
		t.Fatalf("driver\n got: %q\nwant: %q", d.log, wantLog)
	}
	if d.closed != 2 {
		t.Fatalf("%d rows closed; want 2 (the scanned row and the refused query's)", d.closed)
	}
}

// newConn has the context interfaces; its Exec answers driver.ErrSkip
// when it has arguments, as MySQL without interpolateParams does.
type newConn struct {
	oldConn
	pings, resets int
}

func (c *newConn) ExecContext(_ context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) > 0 {
		return nil, driver.ErrSkip
	}
	c.d.add("direct " + q)
	return driver.RowsAffected(1), nil
}
func (c *newConn) Ping(context.Context) error         { c.pings++; return nil }
func (c *newConn) ResetSession(context.Context) error { c.resets++; return nil }
func (c *newConn) IsValid() bool                      { return true }

type newConnector struct{ c *newConn }

func (n newConnector) Connect(context.Context) (driver.Conn, error) { return n.c, nil }
func (n newConnector) Driver() driver.Driver                        { return nil }

// A direct statement is counted once by AfterStatement, and one the
// driver skips is counted once, when its prepared statement runs; Ping and
// ResetSession reach the driver; a BeforeStatement error stops the
// statement.
func TestHooksOnContextDriver(t *testing.T) {
	d := &oldDriver{}
	c := &newConn{oldConn: oldConn{d}}
	var after int
	stop := errors.New("stopped before sending")
	db := sql.OpenDB(Wrap(newConnector{c}, Hooks{
		BeforeStatement: func(_ context.Context, q string, _ []driver.NamedValue) error {
			if strings.Contains(q, "stop") {
				return stop
			}
			return nil
		},
		AfterStatement: func(_ context.Context, _ string, err error) error { after++; return err },
	}))
	defer db.Close()
	ctx := context.Background()
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "DELETE a"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "DELETE b WHERE x = ?", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "stop"); !errors.Is(err, stop) {
		t.Fatalf("want the BeforeStatement error, got %v", err)
	}
	if after != 2 {
		t.Fatalf("AfterStatement ran %d times; want 2", after)
	}
	wantLog := []string{"direct DELETE a", "prepare DELETE b WHERE x = ?", "exec"}
	if strings.Join(d.log, "\n") != strings.Join(wantLog, "\n") {
		t.Fatalf("driver\n got: %q\nwant: %q", d.log, wantLog)
	}
	if c.pings == 0 || c.resets == 0 {
		t.Fatalf("pings %d, resets %d: not forwarded", c.pings, c.resets)
	}
}
