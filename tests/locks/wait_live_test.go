package locks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	mysqldialect "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// i14bRow is the row the bounded-wait tests fight over.
type i14bRow struct {
	ID uint
	N  int
}

func (i14bRow) TableName() string { return "i14b_rows" }

// waitSetting is how a live test reads, changes and resets the session's
// own lock timeout on one database.
type waitSetting struct {
	read, set, reset string
	// bound is the WaitAtMost the test asks for: 300 ms where the
	// database counts milliseconds, 1 s where it counts seconds.
	bound time.Duration
}

func waitSettingOf(tg *testdb.Target) (waitSetting, bool) {
	switch tg.Dialect.Kind {
	case dialects.Postgres:
		return waitSetting{"SHOW lock_timeout", "SET lock_timeout = '7s'", "RESET lock_timeout", 300 * time.Millisecond}, true
	case dialects.MariaDB, dialects.MySQL:
		return waitSetting{
			"SELECT CONCAT(@@SESSION.innodb_lock_wait_timeout, '/', @@SESSION.lock_wait_timeout)",
			"SET SESSION innodb_lock_wait_timeout = 7, lock_wait_timeout = 7",
			"SET SESSION innodb_lock_wait_timeout = @@GLOBAL.innodb_lock_wait_timeout, lock_wait_timeout = @@GLOBAL.lock_wait_timeout",
			time.Second,
		}, true
	case dialects.SQLServer:
		return waitSetting{"SELECT @@LOCK_TIMEOUT", "SET LOCK_TIMEOUT 7000", "SET LOCK_TIMEOUT -1", 300 * time.Millisecond}, true
	}
	return waitSetting{}, false
}

// onTx is a lockplugin *gorm.DB running on one *sql.Tx, so that the test
// can read the session's settings inside the same transaction.
func onTx(ctx context.Context, tg *testdb.Target, tx *sql.Tx) *gorm.DB {
	db := tg.DB.Session(&gorm.Session{NewDB: true, Context: ctx})
	db.Statement.ConnPool = tx
	return db
}

func readSetting(ctx context.Context, t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, query string) string {
	t.Helper()
	var v string
	if err := q.QueryRowContext(ctx, query).Scan(&v); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v
}

// TestWaitAtMostLive: a waiter behind a held row. Without a bound it is
// still waiting at twice the bound (and gets the row once the holder
// commits); with WaitAtMost it fails with ErrLockNotAvailable after about
// the bound, and the session's own lock timeout is the same afterwards:
// in the same transaction (after the timeout, under a savepoint, and after
// a bounded lock that was granted) and after the commit.
//
// "mysql-path" runs MySQL's way (the session's timeouts set and put back
// around the query) against the MariaDB server, through a dialector that
// reports MySQL 8.0.36: both servers have the same variables, and no
// MySQL server is at hand here.
func TestWaitAtMostLive(t *testing.T) {
	for _, kind := range []string{testdb.Postgres, testdb.MySQL, testdb.SQLServer, "mysql-path"} {
		t.Run(kind, func(t *testing.T) {
			var tg *testdb.Target
			if kind == "mysql-path" {
				tg = asMySQL8(t, testdb.Get(t, testdb.MySQL))
			} else {
				tg = testdb.Get(t, kind)
			}
			runWaitLive(t, tg)
		})
	}
}

// asMySQL8 opens tg's server through a MySQL dialector that reports
// version 8.0.36, with lockplugin registered.
func asMySQL8(t *testing.T, tg *testdb.Target) *testdb.Target {
	t.Helper()
	if !tg.Is(dialects.MariaDB) {
		t.Skipf("the MySQL path is run against MariaDB; this server is %s", tg.Dialect)
	}
	db, err := gorm.Open(mysqldialect.New(mysqldialect.Config{Conn: tg.SQL, SkipInitializeWithVersion: true, ServerVersion: "8.0.36"}),
		&gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Use(lockplugin.New()); err != nil {
		t.Fatal(err)
	}
	d := dialects.Of(db)
	if d.Kind != dialects.MySQL {
		t.Fatalf("dialect %s, want MySQL", d)
	}
	return &testdb.Target{Name: "mysql-path", Dialect: d, DB: db, Plain: tg.Plain, SQL: tg.SQL, DSN: tg.DSN}
}

func runWaitLive(t *testing.T, tg *testdb.Target) {
	ctx := liveContext(t)
	tg.Reset(t, &i14bRow{})
	if err := tg.DB.Create(&[]i14bRow{{ID: 1}, {ID: 2}}).Error; err != nil {
		t.Fatal(err)
	}
	ws, ok := waitSettingOf(tg)
	if !ok {
		t.Fatalf("no lock timeout setting known for %s", tg.Dialect)
	}
	lockRow := func(tx *gorm.DB, opts ...lockplugin.LockOption) error {
		var r i14bRow
		return tx.Clauses(lockplugin.ForUpdate(opts...)).First(&r, 1).Error
	}

	// The unprotected version: no bound, the waiter waits.
	holder := begin(t, ctx, tg.DB)
	if err := lockRow(holder); err != nil {
		t.Fatal(err)
	}
	waiter := begin(t, ctx, tg.DB)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- lockRow(waiter) }()
	select {
	case err := <-done:
		t.Fatalf("the unbounded waiter returned after %v while the row was held: %v", time.Since(start), err)
	case <-time.After(2 * ws.bound):
	}
	t.Logf("%s: unbounded waiter still waiting after %v (2x the bound)", tg.Dialect, time.Since(start).Round(time.Millisecond))
	if err := holder.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the unbounded waiter, once the holder committed: %v", err)
	}
	if err := waiter.Commit().Error; err != nil {
		t.Fatal(err)
	}

	// The bounded wait, on a session whose own timeout is 7 s.
	holder = begin(t, ctx, tg.DB)
	if err := lockRow(holder); err != nil {
		t.Fatal(err)
	}
	conn, err := tg.SQL.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.ExecContext(context.Background(), ws.reset)
		_ = conn.Close()
	})
	if _, err := conn.ExecContext(ctx, ws.set); err != nil {
		t.Fatal(err)
	}
	sessionBefore := readSetting(ctx, t, conn, ws.read)
	trials := 3
	if ws.bound >= time.Second {
		trials = 2 // whole seconds: keep the suite fast
	}
	for i := range trials {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		db := onTx(ctx, tg, tx)
		before := readSetting(ctx, t, tx, ws.read)
		start := time.Now()
		// A nested Transaction is a savepoint: on PostgreSQL the
		// timeout aborts only it, and the test can read on.
		err = db.Transaction(func(sp *gorm.DB) error { return lockRow(sp, lockplugin.WaitAtMost(ws.bound)) })
		took := time.Since(start)
		if !errors.Is(err, lockplugin.ErrLockNotAvailable) {
			_ = tx.Rollback()
			t.Fatalf("trial %d: want ErrLockNotAvailable after %v, got %v after %v", i, ws.bound, err, took)
		}
		if took < ws.bound || took > 10*ws.bound+5*time.Second {
			_ = tx.Rollback()
			t.Fatalf("trial %d: the bounded waiter returned after %v, bound %v", i, took, ws.bound)
		}
		t.Logf("%s trial %d: WaitAtMost(%v) returned ErrLockNotAvailable after %v", tg.Dialect, i, ws.bound, took.Round(time.Millisecond))
		afterTimeout := readSetting(ctx, t, tx, ws.read)
		// A bounded lock that is granted (row 2 is free) puts the
		// setting back too.
		var r i14bRow
		if err := db.Clauses(lockplugin.ForUpdate(lockplugin.WaitAtMost(ws.bound))).First(&r, 2).Error; err != nil {
			_ = tx.Rollback()
			t.Fatalf("trial %d: bounded lock of a free row: %v", i, err)
		}
		afterGrant := readSetting(ctx, t, tx, ws.read)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		afterCommit := readSetting(ctx, t, conn, ws.read)
		if got := fmt.Sprint(before, afterTimeout, afterGrant, afterCommit); got != fmt.Sprint(sessionBefore, sessionBefore, sessionBefore, sessionBefore) {
			t.Fatalf("trial %d: %s before, after the timeout, after a granted lock, after commit: %s; want %s each", i, ws.read, got, sessionBefore)
		}
	}
	t.Logf("%s: %s = %s before and after %d bounded waits", tg.Dialect, ws.read, sessionBefore, trials)
}
