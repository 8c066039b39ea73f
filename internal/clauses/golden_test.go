package clauses

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

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/dryrun"
	"github.com/lockplugin/lockplugin/internal/goldenfile"
	"github.com/lockplugin/lockplugin/internal/plugin"
)

// goldenItem is the model the golden queries read.
type goldenItem struct {
	ID   uint
	Name string
}

func (goldenItem) TableName() string { return "items" }

// registeredPlugin stands in for the root lockplugin plugin, which this
// package cannot import: Registered looks for its name only.
type registeredPlugin struct{}

func (registeredPlugin) Name() string              { return plugin.Name }
func (registeredPlugin) Initialize(*gorm.DB) error { return nil }

// goldenDB opens a DryRun stand-in for d with the lock builders of cfg.
func goldenDB(t *testing.T, d dialects.Dialect, cfg Config) *gorm.DB {
	t.Helper()
	db, err := dryrun.Open(d.Dialector, d.Version)
	if err != nil {
		t.Fatal(err)
	}
	if err := Register(db, cfg); err != nil {
		t.Fatal(err)
	}
	db.Plugins[plugin.Name] = registeredPlugin{}
	return db
}

// rendered is a query's SQL, or why it was refused.
func rendered(tx *gorm.DB) string {
	if tx.Error != nil {
		return "refused: " + tx.Error.Error()
	}
	return tx.Statement.SQL.String()
}

// TestRowLockGolden renders every row-lock clause, on every database: the
// clauses themselves (with each option), SQL Server's table hints, the
// refusals that depend on the query, the statements around a bounded wait
// that is a setting, and SQLite's writer lock.
func TestRowLockGolden(t *testing.T) {
	strengths := []struct {
		name string
		make func(...LockOption) clause.Expression
	}{
		{"ForUpdate", ForUpdate}, {"ForShare", ForShare},
		{"ForNoKeyUpdate", ForNoKeyUpdate}, {"ForKeyShare", ForKeyShare},
	}
	options := []struct {
		name string
		opts []LockOption
	}{
		{"", nil},
		{"NoWait", []LockOption{NoWait}},
		{"SkipLocked", []LockOption{SkipLocked}},
		{"WaitAtMost(1500ms)", []LockOption{WaitAtMost(1500 * time.Millisecond)}},
		{"Of(items)", []LockOption{Of("items")}},
		{"Of(CurrentTable), NoWait", []LockOption{Of(clause.CurrentTable), NoWait}},
		{"Of(items), SkipLocked", []LockOption{Of("items"), SkipLocked}},
	}
	goldenfile.Check(t, "rowlock", func(d dialects.Dialect, p *goldenfile.Page) {
		db := goldenDB(t, d, Config{})
		for _, s := range strengths {
			for _, o := range options {
				var items []goldenItem
				name := s.name + "(" + o.name + ")"
				p.Add(name, rendered(db.Clauses(s.make(o.opts...)).Find(&items)))
			}
		}
		var items []goldenItem
		p.Add("ForUpdate(Of(items)) with a join", rendered(db.Clauses(ForUpdate(Of("items"))).
			Joins("JOIN others ON others.item_id = items.id").Find(&items)))
		p.Add("ForUpdate(Of(others)) with a join", rendered(db.Clauses(ForUpdate(Of("others"))).
			Joins("JOIN others ON others.item_id = items.id").Find(&items)))
		p.Add("ForUpdate() with a join", rendered(db.Clauses(ForUpdate()).
			Joins("JOIN others ON others.item_id = items.id").Find(&items)))
		p.Add("ForShare(SkipLocked) on an alias", rendered(db.Clauses(ForShare(SkipLocked)).Table("items AS i").Find(&items)))
		p.Add("ForUpdate(Of(i)) on an alias", rendered(db.Clauses(ForUpdate(Of("i"))).Table("items AS i").Find(&items)))
		var one goldenItem
		p.Add("ForUpdate() with First", rendered(db.Clauses(ForUpdate()).First(&one)))
		var n int64
		p.Add("ForUpdate() with Count", rendered(db.Model(&goldenItem{}).Clauses(ForUpdate()).Count(&n)))
		p.Add("ForUpdate() with Distinct", rendered(db.Clauses(ForUpdate()).Distinct("name").Find(&items)))
		p.Add("clause.Locking UPDATE SKIP LOCKED", rendered(db.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"}).Find(&items)))
		p.Add("clause.Locking SHARE NOWAIT", rendered(db.Clauses(clause.Locking{Strength: "SHARE", Options: "NOWAIT"}).Find(&items)))

		// The statements a setting-style bound sends around the query.
		for _, wait := range []time.Duration{300 * time.Millisecond, 2 * time.Second} {
			for _, failed := range []bool{false, true} {
				p.Add(fmt.Sprintf("WaitAtMost(%v) statements, query failed %v", wait, failed),
					waitStatements(t, d, ForUpdate(WaitAtMost(wait)).(lock), failed, false))
			}
		}
		for _, failed := range []bool{false, true} {
			p.Add(fmt.Sprintf("WaitAtMost(2s) statements, restore fails, query failed %v", failed),
				waitStatements(t, d, ForUpdate(WaitAtMost(2*time.Second)).(lock), failed, true))
		}

		// SQLite's writer lock.
		wl := goldenDB(t, d, Config{SQLiteWriterLock: true})
		p.Add("SQLiteWriterLock ForUpdate() in DryRun", rendered(wl.Clauses(ForUpdate()).Find(&items)))
		for _, l := range []lock{
			ForUpdate().(lock), ForShare(SkipLocked).(lock), ForUpdate(NoWait).(lock),
		} {
			p.Add("SQLiteWriterLock "+l.describe(nil)+" statements", writerLockStatements(t, d, l, ""))
			p.Add("SQLiteWriterLock "+l.describe(nil)+" on Table(\"main.items AS i\") statements", writerLockStatements(t, d, l, "main.items AS i"))
		}
	})
}

// waitStatements runs setWait and the restore for l on a recording
// connection inside a transaction and returns the statements sent.
func waitStatements(t *testing.T, d dialects.Dialect, l lock, failed, restoreFails bool) string {
	t.Helper()
	rec, tx := recordingTx(t)
	defer func() { _ = tx.Rollback() }()
	db := goldenDB(t, d, Config{})
	stmt := &gorm.Statement{DB: db, ConnPool: tx, Context: context.Background(), Table: "items", Clauses: map[string]clause.Clause{}}
	tg := newTarget(d, Config{})
	if err := tg.setWait(stmt, l); err != nil {
		rec.add("error: " + err.Error())
	}
	if restoreFails {
		rec.mu.Lock()
		rec.failAfter = len(rec.log)
		rec.mu.Unlock()
	}
	probe := &gorm.DB{Statement: stmt, Config: db.Config}
	if failed {
		probe.Error = errors.New("the query failed")
	}
	restoreWait(probe)
	if probe.Error != nil && probe.Error.Error() != "the query failed" {
		rec.add("error: " + probe.Error.Error())
	}
	return rec.String()
}

// writerLockStatements runs takeWriterLock for l (when d takes the writer
// lock) on a recording connection and returns the statements sent.
func writerLockStatements(t *testing.T, d dialects.Dialect, l lock, table string) string {
	t.Helper()
	tg := newTarget(d, Config{SQLiteWriterLock: true})
	if !tg.writerLock {
		return ""
	}
	rec, tx := recordingTx(t)
	defer func() { _ = tx.Rollback() }()
	db := goldenDB(t, d, Config{SQLiteWriterLock: true})
	stmt := &gorm.Statement{DB: db, ConnPool: tx, Context: context.Background(), Table: "items", Clauses: map[string]clause.Clause{}}
	if table != "" {
		stmt.TableExpr = &clause.Expr{SQL: table}
	}
	if err := tg.takeWriterLock(stmt, l); err != nil {
		rec.add("error: " + err.Error())
	}
	return rec.String()
}

// recorder is a database/sql driver that records the statements it is
// sent and answers the ones that read a setting with a fixed row.
type recorder struct {
	mu  sync.Mutex
	log []string
	// failAfter, when positive, fails every statement after the first
	// failAfter ones (a connection that dies between set and restore).
	failAfter int
}

// failing reports whether the statement just recorded must fail.
func (r *recorder) failing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failAfter > 0 && len(r.log) > r.failAfter
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.log, "\n")
}

func recordingTx(t *testing.T) (*recorder, *sql.Tx) {
	t.Helper()
	r := &recorder{}
	sqlDB := sql.OpenDB(recConnector{r})
	t.Cleanup(func() { _ = sqlDB.Close() })
	tx, err := sqlDB.Begin()
	if err != nil {
		t.Fatal(err)
	}
	return r, tx
}

type recConnector struct{ r *recorder }

func (c recConnector) Connect(context.Context) (driver.Conn, error) { return recConn(c), nil }
func (c recConnector) Driver() driver.Driver                        { return recDriver(c) }

type recDriver recConnector

func (d recDriver) Open(string) (driver.Conn, error) { return recConn(d), nil }

type recConn struct{ r *recorder }

func (c recConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("recorder: no Prepare") }
func (c recConn) Close() error                        { return nil }
func (c recConn) Begin() (driver.Tx, error)           { return recTx{}, nil }

func (c recConn) QueryContext(_ context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.r.add("query: " + q + argList(args))
	if c.r.failing() {
		return nil, errors.New("recorder: connection lost")
	}
	// The answers of the servers: the values before the change.
	switch {
	case strings.Contains(q, "current_setting('lock_timeout')"):
		return &recRows{cols: 2, row: []driver.Value{"0", "300ms"}}, nil
	case strings.Contains(q, "set_config"):
		return &recRows{cols: 1, row: []driver.Value{"0"}}, nil
	case strings.Contains(q, "@@SESSION.innodb_lock_wait_timeout"):
		return &recRows{cols: 2, row: []driver.Value{int64(50), int64(31536000)}}, nil
	case strings.Contains(q, "@@LOCK_TIMEOUT"):
		return &recRows{cols: 1, row: []driver.Value{int64(-1)}}, nil
	case strings.Contains(q, "busy_timeout"):
		return &recRows{cols: 1, row: []driver.Value{int64(5000)}}, nil
	}
	return nil, fmt.Errorf("recorder: no answer for %q", q)
}

func (c recConn) ExecContext(_ context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.r.add("exec: " + q + argList(args))
	if c.r.failing() {
		return nil, errors.New("recorder: connection lost")
	}
	return driver.RowsAffected(0), nil
}

func argList(args []driver.NamedValue) string {
	if len(args) == 0 {
		return ""
	}
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = fmt.Sprint(a.Value)
	}
	return " [" + strings.Join(s, ", ") + "]"
}

type recTx struct{}

func (recTx) Commit() error   { return nil }
func (recTx) Rollback() error { return nil }

type recRows struct {
	cols int
	row  []driver.Value
	done bool
}

func (r *recRows) Columns() []string { return make([]string, r.cols) }
func (r *recRows) Close() error      { return nil }
func (r *recRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	copy(dest, r.row)
	return nil
}
