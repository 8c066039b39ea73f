package locks

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// sqliteDeferredDSN is WAL with a busy timeout but deferred transactions:
// BEGIN takes no lock, so whatever serialises the scenarios below is the
// plugin's writer lock, not _txlock=immediate.
func sqliteDeferredDSN(path string) string {
	return "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(20000)"
}

// openSQLite opens a fresh SQLite WAL file with lockplugin registered with
// opts (nil: plain GORM, no plugin).
func openSQLite(t *testing.T, path string, opts []lockplugin.Option) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(testdb.Dialector(testdb.SQLite, sqliteDeferredDSN(path)), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	sqlDB.SetMaxOpenConns(32)
	t.Cleanup(func() { _ = sqlDB.Close() })
	if opts != nil {
		if err := db.Use(lockplugin.New(opts...)); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestSQLiteWriterLockScenarios: on SQLite WAL with deferred transactions,
// 8 workers x 25 read-modify-write increments lose updates without a lock,
// and with FOR UPDATE are refused without the option; with
// SQLiteWriterLock they lose none. The work queue (2,000 jobs, FOR UPDATE
// SKIP LOCKED) claims each job exactly once.
func TestSQLiteWriterLockScenarios(t *testing.T) {
	path := filepath.Join(t.TempDir(), "i13.db")
	plain := openSQLite(t, path, nil)
	refusing := openSQLite(t, path, []lockplugin.Option{})
	opted := openSQLite(t, path, []lockplugin.Option{lockplugin.SQLiteWriterLock()})
	ctx := t.Context()
	want := i13Config.Workers * i13Config.Rounds

	base, err := scenario.LostUpdateUnprotected(ctx, plain, i13Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("no lock: %s", base.Observed)
	if base.Lost <= 0 {
		t.Fatalf("the unprotected baseline lost nothing (%s)", base.Observed)
	}

	r, err := scenario.LostUpdateForUpdate(ctx, refusing, i13Config)
	if err != nil || r.Unsupported == "" {
		t.Fatalf("FOR UPDATE without the option must be refused: %+v, %v", r, err)
	}
	t.Logf("FOR UPDATE without the option: %s", r.Unsupported)

	r, err = scenario.LostUpdateForUpdate(ctx, opted, i13Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FOR UPDATE with SQLiteWriterLock: %s in %v", r.Observed, r.Elapsed)
	if r.Unsupported != "" || r.Lost != 0 || r.Ops != want || !r.OK {
		t.Fatalf("with SQLiteWriterLock: %+v", r)
	}

	q, err := scenario.SkipLockedQueue(ctx, refusing, i13Config)
	if err != nil || q.Unsupported == "" {
		t.Fatalf("SKIP LOCKED without the option must be refused: %+v, %v", q, err)
	}
	q, err = scenario.SkipLockedQueue(ctx, opted, i13Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("work queue with SQLiteWriterLock: %s in %v", q.Observed, q.Elapsed)
	if q.Unsupported != "" || q.Ops != 2000 || q.Lost != 0 || !q.OK {
		t.Fatalf("work queue with SQLiteWriterLock: %+v", q)
	}
}

// TestSQLiteWriterLockSemantics: with the option, a locking read holds the
// writer lock until its transaction ends (another writer waits, and gets
// in after the commit); NOWAIT fails at once with ErrLockNotAvailable and
// leaves the connection's busy timeout as it was; a lock in DryRun or on a
// derived table is refused; outside a transaction the lock is still
// refused.
func TestSQLiteWriterLockSemantics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "i13-sem.db")
	db := openSQLite(t, path, []lockplugin.Option{lockplugin.SQLiteWriterLock()})
	ctx := liveContext(t)
	if err := db.AutoMigrate(&i13Row{}); err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&[]i13Row{{ID: 1}, {ID: 2}}).Error; err != nil {
		t.Fatal(err)
	}

	var r i13Row
	if err := db.WithContext(ctx).Clauses(lockplugin.ForUpdate()).First(&r, 1).Error; !errors.Is(err, lockplugin.ErrNotInTransaction) {
		t.Fatalf("outside a transaction: want ErrNotInTransaction, got %v", err)
	}

	tx1 := begin(t, ctx, db)
	if err := tx1.Clauses(clause.Locking{Strength: clause.LockingStrengthShare, Table: clause.Table{Name: clause.CurrentTable}}).First(&r, 1).Error; err != nil {
		t.Fatalf("FOR SHARE OF the current table: %v", err)
	}

	// NOWAIT from another transaction fails at once.
	start := time.Now()
	err := db.WithContext(ctx).Transaction(func(tx2 *gorm.DB) error {
		var r2 i13Row
		return tx2.Clauses(lockplugin.ForUpdate(lockplugin.NoWait)).First(&r2, 2).Error
	})
	if !errors.Is(err, lockplugin.ErrLockNotAvailable) {
		t.Fatalf("NOWAIT while the writer lock is held: want ErrLockNotAvailable, got %v", err)
	}
	t.Logf("NOWAIT refused in %v: %v", time.Since(start), err)
	// The pool's connections keep their busy timeout.
	sqlDB, _ := db.DB()
	for i := 0; i < 4; i++ {
		var busy int
		if err := sqlDB.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil || busy != 20000 {
			t.Fatalf("busy_timeout after NOWAIT = %d, %v; want 20000", busy, err)
		}
	}

	// A writer waits for tx1, then gets in.
	writer := make(chan readResult, 1)
	go func() {
		err := db.WithContext(ctx).Model(&i13Row{}).Where("id = ?", 1).Update("n", 7).Error
		writer <- readResult{err: err}
	}()
	time.Sleep(200 * time.Millisecond)
	notYet(t, writer, "a writer while the writer lock is held")
	if err := tx1.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if got := receive(t, ctx, writer); got.err != nil {
		t.Fatal(got.err)
	}

	// Refused where no statement can take the lock, before any SQL.
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		_, err := tx.Clauses(lockplugin.ForUpdate()).Model(&i13Row{}).Session(&gorm.Session{DryRun: true}).Rows()
		if !errors.Is(err, lockplugin.ErrUnsupported) {
			t.Errorf("DryRun: want ErrUnsupported, got %v", err)
		}
		var rows []i13Row
		err = tx.Where("id IN (?)", tx.Model(&i13Row{}).Clauses(lockplugin.ForUpdate()).Select("id")).Find(&rows).Error
		if !errors.Is(err, lockplugin.ErrUnsupported) {
			t.Errorf("a lock in a subquery: want ErrUnsupported, got %v", err)
		}
		err = tx.Clauses(lockplugin.ForUpdate()).Table("(?) AS r", tx.Model(&i13Row{})).Find(&rows).Error
		if !errors.Is(err, lockplugin.ErrUnsupported) {
			t.Errorf("a lock on a derived table: want ErrUnsupported, got %v", err)
		}
		err = tx.Clauses(lockplugin.ForNoKeyUpdate()).Find(&rows).Error
		if !errors.Is(err, lockplugin.ErrUnsupported) {
			t.Errorf("FOR NO KEY UPDATE: want ErrUnsupported, got %v", err)
		}
		err = tx.Clauses(lockplugin.ForUpdate(lockplugin.Of("i13_other"))).Find(&rows).Error
		if !errors.Is(err, lockplugin.ErrUnsupported) {
			t.Errorf("OF another table: want ErrUnsupported, got %v", err)
		}
		// Table("i13_rows r") with Of the alias, and SKIP LOCKED, run.
		if err := tx.Clauses(lockplugin.ForUpdate(lockplugin.Of("r"), lockplugin.SkipLocked)).Table("i13_rows r").Find(&rows).Error; err != nil || len(rows) != 2 {
			t.Errorf("Table with an alias: %d rows, %v", len(rows), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
