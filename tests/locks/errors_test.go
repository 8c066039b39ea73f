package locks

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	mysqldialect "gorm.io/driver/mysql"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestSQLiteNothingSent: on SQLite every lock fails with ErrUnsupported,
// and not one statement reaches the database, in a transaction or not.
func TestSQLiteNothingSent(t *testing.T) {
	raw, err := sql.Open("sqlite", testdb.SQLiteDSN(filepath.Join(t.TempDir(), "lk.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	pool := &countingPool{inner: raw}
	db, err := gorm.Open(sqlite.Dialector{Conn: pool}, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Use(lockplugin.New()); err != nil {
		t.Fatal(err)
	}
	if err := db.AutoMigrate(&lkJob{}); err != nil {
		t.Fatal(err)
	}

	// The counter sees what does reach the database.
	before := pool.statements()
	var jobs []lkJob
	if err := db.Find(&jobs).Error; err != nil {
		t.Fatal(err)
	}
	if pool.statements() != before+1 {
		t.Fatalf("a plain query was counted %d times, want 1", pool.statements()-before)
	}

	locks := append([]renderCase{{"clause.Locking", find(clause.Locking{Strength: clause.LockingStrengthUpdate})}}, matrixCells...)
	for _, c := range locks {
		t.Run(c.name, func(t *testing.T) {
			before := pool.statements()
			outside := c.query(db).Error
			var inside error
			if err := db.Transaction(func(tx *gorm.DB) error {
				inside = c.query(tx).Error
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, err := range []error{outside, inside} {
				if !errors.Is(err, lockplugin.ErrUnsupported) && !errors.Is(err, lockplugin.ErrInvalidLock) {
					t.Fatalf("want ErrUnsupported (or ErrInvalidLock for NOWAIT with SKIP LOCKED), got %v", err)
				}
			}
			if n := pool.statements() - before; n != 0 {
				t.Fatalf("%d statement(s) reached SQLite", n)
			}
		})
	}
}

// fakeDB opens a dialector over a countingPool with no database behind it:
// statements are counted and fail with errFakePool (or with fail, when
// set), and nothing is sent anywhere.
func fakeDB(t *testing.T, kind string, opts ...lockplugin.Option) (*gorm.DB, *countingPool) {
	t.Helper()
	pool := &countingPool{}
	var d gorm.Dialector
	switch kind {
	case "postgres":
		d = postgres.New(postgres.Config{Conn: pool})
	case "mariadb":
		d = mysqldialect.New(mysqldialect.Config{Conn: pool, SkipInitializeWithVersion: true, ServerVersion: "10.11.6-MariaDB"})
	case "sqlserver":
		d = sqlserver.New(sqlserver.Config{Conn: pool})
	default:
		t.Fatalf("no fake %s", kind)
	}
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true, SkipDefaultTransaction: true})
	if err != nil {
		t.Fatal(err)
	}
	if kind == "postgres" {
		// The pool answers nothing, so the version query dialects.Of
		// sends once per pool is answered here; it is not under test.
		dialects.AssumeServerVersion(db, "PostgreSQL 16.4")
		t.Cleanup(func() { dialects.Forget(db) })
	}
	if err := db.Use(lockplugin.New(opts...)); err != nil {
		t.Fatal(err)
	}
	return db, pool
}

// TestRefusedBeforeSending: the checks that run before any SQL, on a pool
// that counts what is sent.
func TestRefusedBeforeSending(t *testing.T) {
	findLocked := func(lock clause.Expression) func(db *gorm.DB) error {
		return func(db *gorm.DB) error {
			var jobs []lkJob
			return db.Clauses(lock).Find(&jobs).Error
		}
	}
	inTx := func(q func(*gorm.DB) error) func(db *gorm.DB) error {
		return func(db *gorm.DB) error {
			return db.Transaction(q)
		}
	}
	cases := []struct {
		kind, name string
		opts       []lockplugin.Option
		run        func(*gorm.DB) error
		want       error // errFakePool: the statement was sent
		sent       int64
	}{
		{"postgres", "outside a transaction", nil, findLocked(lockplugin.ForUpdate()), lockplugin.ErrNotInTransaction, 0},
		{"postgres", "GORM's clause.Locking outside a transaction", nil, findLocked(clause.Locking{Strength: "UPDATE"}), lockplugin.ErrNotInTransaction, 0},
		{"postgres", "inside a transaction", nil, inTx(findLocked(lockplugin.ForUpdate())), errFakePool, 1},
		{"postgres", "outside, allowed by option", []lockplugin.Option{lockplugin.AllowLocksOutsideTransaction()}, findLocked(lockplugin.ForUpdate()), errFakePool, 1},
		{"postgres", "DryRun is exempt", nil, func(db *gorm.DB) error {
			return findLocked(lockplugin.ForUpdate())(db.Session(&gorm.Session{DryRun: true}))
		}, nil, 0},
		{"postgres", "no lock outside a transaction", nil, findLocked(lockplugin.NoLock()), errFakePool, 1},
		{"postgres", "NOWAIT with SKIP LOCKED", nil, inTx(findLocked(lockplugin.ForUpdate(lockplugin.NoWait, lockplugin.SkipLocked))), lockplugin.ErrInvalidLock, 0},
		{"postgres", "Raw", nil, inTx(func(tx *gorm.DB) error {
			var jobs []lkJob
			return tx.Clauses(lockplugin.ForUpdate()).Raw("SELECT * FROM lk_jobs").Scan(&jobs).Error
		}), lockplugin.ErrInvalidLock, 0},
		{"postgres", "Exec", nil, inTx(func(tx *gorm.DB) error {
			return tx.Clauses(lockplugin.ForUpdate()).Exec("UPDATE lk_jobs SET state = 'x'").Error
		}), lockplugin.ErrInvalidLock, 0},
		{"postgres", "Rows", nil, inTx(func(tx *gorm.DB) error {
			_, err := tx.Clauses(lockplugin.ForShare(lockplugin.Of(""))).Model(&lkJob{}).Rows()
			return err
		}), lockplugin.ErrInvalidLock, 0},
		{"postgres", "PrepareStmt transaction counts as one", nil, func(db *gorm.DB) error {
			return inTx(findLocked(lockplugin.ForUpdate()))(db.Session(&gorm.Session{PrepareStmt: true}))
		}, errFakePool, 0},
		{"postgres", "PrepareStmt outside a transaction", nil, func(db *gorm.DB) error {
			return findLocked(lockplugin.ForUpdate())(db.Session(&gorm.Session{PrepareStmt: true}))
		}, lockplugin.ErrNotInTransaction, 0},
		{"postgres", "Session inside a transaction", nil, inTx(func(tx *gorm.DB) error {
			return findLocked(lockplugin.ForUpdate())(tx.Session(&gorm.Session{}))
		}), errFakePool, 1},
		{"postgres", "NewDB session and WithContext inside a transaction", nil, inTx(func(tx *gorm.DB) error {
			return findLocked(lockplugin.ForUpdate())(tx.Session(&gorm.Session{NewDB: true}).WithContext(t.Context()))
		}), errFakePool, 1},
		{"postgres", "Begin", nil, func(db *gorm.DB) error {
			tx := db.Begin()
			defer tx.Rollback()
			return findLocked(lockplugin.ForUpdate())(tx)
		}, errFakePool, 1},
		{"postgres", "the outer *gorm.DB used inside a transaction", nil, func(db *gorm.DB) error {
			return db.Transaction(func(*gorm.DB) error { return findLocked(lockplugin.ForUpdate())(db) })
		}, lockplugin.ErrNotInTransaction, 0},
		{"mariadb", "FOR NO KEY UPDATE", nil, inTx(findLocked(lockplugin.ForNoKeyUpdate())), lockplugin.ErrUnsupported, 0},
		{"mariadb", "Of another table", nil, inTx(findLocked(lockplugin.ForUpdate(lockplugin.Of("lk_companies")))), lockplugin.ErrUnsupported, 0},
		{"mariadb", "Of the query's only table", nil, inTx(findLocked(lockplugin.ForUpdate(lockplugin.Of("lk_jobs")))), errFakePool, 1},
		{"mariadb", "Of the only table, with a join", nil, inTx(func(tx *gorm.DB) error {
			var jobs []lkJob
			return tx.Clauses(lockplugin.ForUpdate(lockplugin.Of("lk_jobs"))).Joins("Company").Find(&jobs).Error
		}), lockplugin.ErrUnsupported, 0},
		{"mariadb", "FOR SHARE SKIP LOCKED", nil, inTx(findLocked(lockplugin.ForShare(lockplugin.SkipLocked))), errFakePool, 1},
		{"sqlserver", "JOIN written as SQL", nil, inTx(func(tx *gorm.DB) error {
			var jobs []lkJob
			return tx.Clauses(lockplugin.ForUpdate()).Joins("JOIN lk_companies c ON c.id = lk_jobs.company_id").Find(&jobs).Error
		}), lockplugin.ErrUnsupported, 0},
		{"sqlserver", "derived table", nil, inTx(func(tx *gorm.DB) error {
			var jobs []lkJob
			return tx.Clauses(lockplugin.ForUpdate()).Table("(?) AS j", tx.Model(&lkJob{})).Find(&jobs).Error
		}), lockplugin.ErrUnsupported, 0},
		{"sqlserver", "Of a table not in the query", nil, inTx(findLocked(lockplugin.ForUpdate(lockplugin.Of("lk_other")))), lockplugin.ErrInvalidLock, 0},
		{"sqlserver", "hinted", nil, inTx(findLocked(lockplugin.ForUpdate(lockplugin.SkipLocked))), errFakePool, 1},
	}
	for _, c := range cases {
		t.Run(c.kind+"/"+c.name, func(t *testing.T) {
			db, pool := fakeDB(t, c.kind, c.opts...)
			err := c.run(db)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("want %v, got %v", c.want, err)
			}
			if got := pool.statements(); got != c.sent {
				t.Fatalf("%d statement(s) sent, want %d", got, c.sent)
			}
		})
	}
}

// TestLockNotAvailableWrapped: a driver's lock-not-available error of a
// locking read comes back as ErrLockNotAvailable with the driver's error
// inside; other errors and other statements are left alone.
func TestLockNotAvailableWrapped(t *testing.T) {
	cases := []struct {
		kind   string
		driver error
		wrap   bool
		as     func(error) bool
	}{
		{"postgres", &pgconn.PgError{Code: "55P03", Message: "could not obtain lock on row"}, true,
			func(err error) bool { var e *pgconn.PgError; return errors.As(err, &e) && e.Code == "55P03" }},
		{"postgres", &pgconn.PgError{Code: "40P01"}, false, nil},
		{"mariadb", &mysql.MySQLError{Number: 3572, Message: "NOWAIT"}, true,
			func(err error) bool { var e *mysql.MySQLError; return errors.As(err, &e) && e.Number == 3572 }},
		{"mariadb", &mysql.MySQLError{Number: 1205}, true,
			func(err error) bool { var e *mysql.MySQLError; return errors.As(err, &e) && e.Number == 1205 }},
		{"mariadb", &mysql.MySQLError{Number: 1213}, false, nil},
		{"sqlserver", mssql.Error{Number: 1222}, true,
			func(err error) bool { var e mssql.Error; return errors.As(err, &e) && e.Number == 1222 }},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%v", c.kind, c.driver), func(t *testing.T) {
			db, pool := fakeDB(t, c.kind)
			pool.fail = c.driver
			var jobs []lkJob
			for _, p := range lockedReadPaths {
				err := db.Transaction(func(tx *gorm.DB) error {
					return p.read(tx, lockplugin.ForUpdate(lockplugin.NoWait))
				})
				if got := errors.Is(err, lockplugin.ErrLockNotAvailable); got != c.wrap {
					t.Fatalf("%s: errors.Is(%v, ErrLockNotAvailable) = %v, want %v", p.name, err, got, c.wrap)
				}
				if c.wrap && !c.as(err) {
					t.Fatalf("%s: the driver's error is not reachable with errors.As in %v", p.name, err)
				}
			}
			// Without a lock, the error is the driver's own.
			err := db.Transaction(func(tx *gorm.DB) error { return tx.Find(&jobs).Error })
			if errors.Is(err, lockplugin.ErrLockNotAvailable) {
				t.Fatalf("a read without a lock got wrapped: %v", err)
			}
		})
	}
}

// lockedReadPaths are the ways GORM reads rows, each returning the error
// the caller sees. Row() is not among them: GORM's *sql.Row keeps the
// driver's error until Scan, out of the plugin's reach. Streamed paths
// (Rows, Scan) read the rows after the plugin's callbacks have run: an
// error the server sends after the first row (MySQL and MariaDB send the
// column list first) reaches the caller as the driver's own.
var lockedReadPaths = []struct {
	name     string
	streamed bool
	read     func(tx *gorm.DB, lock clause.Expression) error
}{
	{"Find", false, func(tx *gorm.DB, l clause.Expression) error { var jobs []lkJob; return tx.Clauses(l).Find(&jobs).Error }},
	{"First", false, func(tx *gorm.DB, l clause.Expression) error { var j lkJob; return tx.Clauses(l).First(&j).Error }},
	{"Take", false, func(tx *gorm.DB, l clause.Expression) error { var j lkJob; return tx.Clauses(l).Take(&j).Error }},
	{"Last", false, func(tx *gorm.DB, l clause.Expression) error { var j lkJob; return tx.Clauses(l).Last(&j).Error }},
	{"FirstOrInit", false, func(tx *gorm.DB, l clause.Expression) error { var j lkJob; return tx.Clauses(l).FirstOrInit(&j).Error }},
	{"FindInBatches", false, func(tx *gorm.DB, l clause.Expression) error {
		var jobs []lkJob
		return tx.Clauses(l).FindInBatches(&jobs, 10, func(*gorm.DB, int) error { return nil }).Error
	}},
	{"Pluck", false, func(tx *gorm.DB, l clause.Expression) error {
		var ids []uint
		return tx.Clauses(l).Model(&lkJob{}).Pluck("id", &ids).Error
	}},
	{"Count", false, func(tx *gorm.DB, l clause.Expression) error {
		var n int64
		return tx.Clauses(l).Model(&lkJob{}).Count(&n).Error
	}},
	{"Scan", true, func(tx *gorm.DB, l clause.Expression) error {
		var jobs []lkJob
		return tx.Clauses(l).Model(&lkJob{}).Scan(&jobs).Error
	}},
	{"Rows", true, func(tx *gorm.DB, l clause.Expression) error {
		rows, err := tx.Clauses(l).Model(&lkJob{}).Rows()
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
		}
		return rows.Err()
	}},
	{"generics Find", false, func(tx *gorm.DB, l clause.Expression) error {
		_, err := gorm.G[lkJob](tx, l).Find(tx.Statement.Context)
		return err
	}},
	{"generics First", false, func(tx *gorm.DB, l clause.Expression) error {
		_, err := gorm.G[lkJob](tx, l).First(tx.Statement.Context)
		return err
	}},
}

// TestClassifyDriverErrors: dialects classifies the real driver error
// types, which the dialects package itself cannot import.
func TestClassifyDriverErrors(t *testing.T) {
	wrapped := func(err error) error { return fmt.Errorf("query: %w", err) }
	for _, c := range []struct {
		err                    error
		lockNotAvail, retryErr bool
	}{
		{&mysql.MySQLError{Number: 3572}, true, false},
		{&mysql.MySQLError{Number: 1205}, true, false},
		{wrapped(&mysql.MySQLError{Number: 1213}), false, true},
		{&mysql.MySQLError{Number: 1062}, false, false},
		{&pgconn.PgError{Code: "55P03"}, true, false},
		{wrapped(&pgconn.PgError{Code: "40001"}), false, true},
		{&pgconn.PgError{Code: "40P01"}, false, true},
		{&pgconn.PgError{Code: "23505"}, false, false},
		{mssql.Error{Number: 1222}, true, false},
		{wrapped(mssql.Error{Number: 1205}), false, true},
		{mssql.Error{Number: 2627}, false, false},
	} {
		if got := dialects.IsLockNotAvailable(c.err); got != c.lockNotAvail {
			t.Errorf("IsLockNotAvailable(%T %v) = %v, want %v", c.err, c.err, got, c.lockNotAvail)
		}
		if got := dialects.IsRetryable(c.err); got != c.retryErr {
			t.Errorf("IsRetryable(%T %v) = %v, want %v", c.err, c.err, got, c.retryErr)
		}
	}
}

// TestClassifySQLiteBusy: a real SQLITE_BUSY from the driver behind
// glebarez/sqlite is retryable.
func TestClassifySQLiteBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	open := func(timeout int) *sql.DB {
		db, err := sql.Open("sqlite", fmt.Sprintf("file:%s?_pragma=journal_mode(WAL)&_pragma=busy_timeout(%d)&_txlock=immediate", path, timeout))
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	holder, other := open(5000), open(0)
	if _, err := holder.Exec("CREATE TABLE lk_busy (id INTEGER)"); err != nil {
		t.Fatal(err)
	}
	tx, err := holder.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.Exec("INSERT INTO lk_busy VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	_, err = other.Begin()
	if err == nil {
		t.Fatal("a second writer began while the first held the lock")
	}
	if !dialects.IsRetryable(err) {
		t.Fatalf("IsRetryable(%T %v) = false, want true for SQLITE_BUSY", err, err)
	}
	if dialects.IsLockNotAvailable(err) {
		t.Fatalf("SQLITE_BUSY is not a row lock refusal: %v", err)
	}
}
