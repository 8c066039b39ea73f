package advisory

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

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

// fakeDB is a database/sql driver that records every statement and answers
// from a script, so that the executor's handling of each database's answers
// (return codes, OUT binds, errors, discarded connections) is tested without
// a server. It speaks no SQL: answer decides what each statement returns.
type fakeDB struct {
	mu      sync.Mutex
	log     []call
	opened  int
	closed  int
	nextID  int
	answer  func(c call) ([]driver.Value, error)
	outs    func(c call, outs []sql.Out) error
	blockOn string        // a statement containing this blocks until its ctx ends
	blocked chan struct{} // receives once for each statement that blocks
}

// call is one statement as the driver saw it.
type call struct {
	conn int
	sql  string
	args []any
}

func (f *fakeDB) Connect(context.Context) (driver.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened++
	f.nextID++
	return &fakeConn{f: f, id: f.nextID}, nil
}

func (f *fakeDB) Driver() driver.Driver { return fakeDriver{} }

type fakeDriver struct{}

func (fakeDriver) Open(string) (driver.Conn, error) { return nil, errors.New("use the connector") }

// statements returns the SQL texts sent so far.
func (f *fakeDB) statements() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.log))
	for i, c := range f.log {
		out[i] = c.sql
	}
	return out
}

func (f *fakeDB) calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.log...)
}

func (f *fakeDB) counts() (opened, closed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opened, f.closed
}

type fakeConn struct {
	f  *fakeDB
	id int
}

func (c *fakeConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("fake: no prepare") }

func (c *fakeConn) Close() error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.closed++
	return nil
}

func (c *fakeConn) Begin() (driver.Tx, error) { return fakeTx{c}, nil }

func (c *fakeConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	c.record(context.Background(), "BEGIN", nil)
	return fakeTx{c}, nil
}

func (c *fakeConn) CheckNamedValue(*driver.NamedValue) error { return nil }

func (c *fakeConn) ResetSession(context.Context) error { return nil }

type fakeTx struct{ c *fakeConn }

func (t fakeTx) Commit() error {
	t.c.record(context.Background(), "COMMIT", nil)
	return nil
}

func (t fakeTx) Rollback() error {
	t.c.record(context.Background(), "ROLLBACK", nil)
	return nil
}

func (c *fakeConn) record(ctx context.Context, query string, args []driver.NamedValue) (call, error) {
	cl := call{conn: c.id, sql: query}
	var outs []sql.Out
	for _, a := range args {
		if o, ok := a.Value.(sql.Out); ok {
			outs = append(outs, o)
			cl.args = append(cl.args, outParam{})
			continue
		}
		cl.args = append(cl.args, a.Value)
	}
	c.f.mu.Lock()
	c.f.log = append(c.f.log, cl)
	block := c.f.blockOn != "" && strings.Contains(query, c.f.blockOn)
	outFn := c.f.outs
	c.f.mu.Unlock()
	if block {
		if c.f.blocked != nil {
			c.f.blocked <- struct{}{}
		}
		<-ctx.Done()
		return cl, ctx.Err()
	}
	if len(outs) > 0 && outFn != nil {
		return cl, outFn(cl, outs)
	}
	return cl, nil
}

func (c *fakeConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cl, err := c.record(ctx, query, args)
	if err != nil {
		return nil, err
	}
	if c.f.answer != nil && !hasOut(cl.args) {
		if _, err := c.f.answer(cl); err != nil {
			return nil, err
		}
	}
	return driver.RowsAffected(0), nil
}

func (c *fakeConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cl, err := c.record(ctx, query, args)
	if err != nil {
		return nil, err
	}
	row, err := c.f.answer(cl)
	if err != nil {
		return nil, err
	}
	return &fakeRows{row: row}, nil
}

type fakeRows struct {
	row  []driver.Value
	done bool
}

func (r *fakeRows) Columns() []string {
	cols := make([]string, len(r.row))
	for i := range cols {
		cols[i] = fmt.Sprintf("c%d", i)
	}
	return cols
}

func (r *fakeRows) Close() error { return nil }

func (r *fakeRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	copy(dest, r.row)
	return nil
}

// openFake returns a GORM DB that believes it talks to dialector name
// (reporting version), over the fake driver.
func openFake(t *testing.T, name, version string, f *fakeDB) *gorm.DB {
	t.Helper()
	pool := sql.OpenDB(f)
	t.Cleanup(func() { _ = pool.Close() })
	db, err := gorm.Open(&dryrun.Dialector{DialectorName: name, ServerVersion: version}, &gorm.Config{
		ConnPool:             pool,
		Logger:               logger.Discard,
		DisableAutomaticPing: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if version == "" && name == "postgres" {
		// The fake answers only the statements under test, so the
		// version query dialects.Of would send is answered here.
		dialects.AssumeServerVersion(db, "PostgreSQL 16.4")
		t.Cleanup(func() { dialects.Forget(db) })
	}
	return db
}
