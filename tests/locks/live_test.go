package locks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"
	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// liveTimeout bounds every wait of the live tests: a lock that should have
// been granted or refused and was not fails the test instead of hanging it.
const liveTimeout = 30 * time.Second

// eachServer runs fn on every reachable database server (PostgreSQL,
// MySQL/MariaDB, SQL Server), with lk_rows reset to rows 1..4.
func eachServer(t *testing.T, fn func(t *testing.T, tg *testdb.Target)) {
	for _, kind := range []string{testdb.Postgres, testdb.MySQL, testdb.SQLServer} {
		t.Run(kind, func(t *testing.T) {
			tg := testdb.Get(t, kind)
			resetRows(t, tg)
			fn(t, tg)
		})
	}
}

func resetRows(t *testing.T, tg *testdb.Target) {
	t.Helper()
	tg.Reset(t, &lkRow{})
	rows := []lkRow{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}
	if err := tg.DB.Create(&rows).Error; err != nil {
		t.Fatalf("seeding lk_rows: %v", err)
	}
}

func liveContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), liveTimeout)
	t.Cleanup(cancel)
	return ctx
}

// begin starts a transaction that is rolled back at the end of the test
// unless committed first.
func begin(t *testing.T, ctx context.Context, db *gorm.DB) *gorm.DB {
	t.Helper()
	tx := db.WithContext(ctx).Begin()
	if tx.Error != nil {
		t.Fatalf("begin: %v", tx.Error)
	}
	t.Cleanup(func() { tx.Rollback() })
	return tx
}

// waitersOnRows returns how many sessions wait for a row lock on lk_rows,
// as the server itself reports it.
func waitersOnRows(ctx context.Context, tg *testdb.Target) (int64, error) {
	var q string
	switch tg.Dialect.Kind {
	case dialects.Postgres:
		q = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%lk_rows%' AND pid <> pg_backend_pid()"
	case dialects.MySQL, dialects.MariaDB:
		q = "SELECT count(*) FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE '%lk_rows%'"
	case dialects.SQLServer:
		q = "SELECT count(*) FROM sys.dm_exec_requests r CROSS APPLY sys.dm_exec_sql_text(r.sql_handle) s WHERE r.blocking_session_id <> 0 AND s.text LIKE '%lk_rows%'"
	default:
		return 0, errors.New("no lock-wait view on " + tg.Dialect.String())
	}
	var n int64
	err := tg.Plain.WithContext(ctx).Raw(q).Scan(&n).Error
	return n, err
}

// awaitWaiters returns once the server reports n sessions waiting for a
// lock on lk_rows: proof, from the database, that they are blocked. The
// operation that should be blocked delivers to op; it must not finish
// first.
func awaitWaiters(t *testing.T, ctx context.Context, tg *testdb.Target, n int64, op <-chan readResult) {
	t.Helper()
	every := 5 * time.Millisecond
	if tg.Dialect.IsMySQLFamily() {
		// InnoDB refreshes information_schema.innodb_trx only when it
		// has not been read for 100 ms; polling faster reads a stale
		// snapshot forever.
		every = 150 * time.Millisecond
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		got, err := waitersOnRows(ctx, tg)
		if err != nil {
			t.Fatalf("reading lock waits: %v", err)
		}
		if got >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the server never reported %d session(s) waiting on lk_rows (saw %d)", n, got)
		case r := <-op:
			t.Fatalf("the operation that should wait for the lock finished first: %+v", r)
		case <-tick.C:
		}
	}
}

type readResult struct {
	n   int64
	err error
}

// notYet fails the test if ch already delivered: the operation behind it
// must still be blocked.
func notYet(t *testing.T, ch <-chan readResult, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s returned while the lock was held: %+v", what, r)
	default:
	}
}

func receive(t *testing.T, ctx context.Context, ch <-chan readResult) readResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		t.Fatal("timed out waiting for the blocked operation to finish")
		return readResult{}
	}
}

// TestForUpdateWaitsForCommit: a second FOR UPDATE on a locked row waits
// until the holder commits, and then reads the holder's write.
func TestForUpdateWaitsForCommit(t *testing.T) {
	eachServer(t, func(t *testing.T, tg *testdb.Target) {
		ctx := liveContext(t)
		tx1 := begin(t, ctx, tg.DB)
		var r lkRow
		if err := tx1.Clauses(lockplugin.ForUpdate()).First(&r, 1).Error; err != nil {
			t.Fatal(err)
		}
		if err := tx1.Model(&r).Update("n", 42).Error; err != nil {
			t.Fatal(err)
		}

		second := make(chan readResult, 1)
		go func() {
			var r2 lkRow
			err := tg.DB.WithContext(ctx).Transaction(func(tx2 *gorm.DB) error {
				return tx2.Clauses(lockplugin.ForUpdate()).First(&r2, 1).Error
			})
			second <- readResult{n: r2.N, err: err}
		}()

		awaitWaiters(t, ctx, tg, 1, second)
		notYet(t, second, "the second FOR UPDATE")
		if err := tx1.Commit().Error; err != nil {
			t.Fatal(err)
		}
		got := receive(t, ctx, second)
		if got.err != nil {
			t.Fatal(got.err)
		}
		if got.n != 42 {
			t.Fatalf("the second FOR UPDATE read n = %d; it should have waited for the commit and read 42", got.n)
		}
	})
}

// TestForShare: FOR SHARE admits another FOR SHARE at once, and makes a
// writer wait until every share lock is gone.
func TestForShare(t *testing.T) {
	eachServer(t, func(t *testing.T, tg *testdb.Target) {
		ctx := liveContext(t)
		tx1 := begin(t, ctx, tg.DB)
		tx2 := begin(t, ctx, tg.DB)
		var r lkRow
		if err := tx1.Clauses(lockplugin.ForShare()).First(&r, 1).Error; err != nil {
			t.Fatal(err)
		}
		// NOWAIT makes "admitted" exact: blocked, it would fail at once.
		if err := tx2.Clauses(lockplugin.ForShare(lockplugin.NoWait)).First(&r, 1).Error; err != nil {
			t.Fatalf("a second FOR SHARE was not admitted: %v", err)
		}

		writer := make(chan readResult, 1)
		go func() {
			err := tg.DB.WithContext(ctx).Model(&lkRow{}).Where("id = ?", 1).Update("n", 7).Error
			writer <- readResult{err: err}
		}()

		awaitWaiters(t, ctx, tg, 1, writer)
		notYet(t, writer, "the writer")
		if err := tx1.Commit().Error; err != nil {
			t.Fatal(err)
		}
		// tx2 still holds its share lock.
		awaitWaiters(t, ctx, tg, 1, writer)
		notYet(t, writer, "the writer")
		if err := tx2.Commit().Error; err != nil {
			t.Fatal(err)
		}
		if got := receive(t, ctx, writer); got.err != nil {
			t.Fatal(got.err)
		}
		if err := tg.DB.WithContext(ctx).First(&r, 1).Error; err != nil || r.N != 7 {
			t.Fatalf("after the writer: n = %d, %v; want 7", r.N, err)
		}
	})
}

// TestNoWait: NOWAIT on a locked row fails at once with
// ErrLockNotAvailable, and the driver's error is still there.
func TestNoWait(t *testing.T) {
	eachServer(t, func(t *testing.T, tg *testdb.Target) {
		ctx := liveContext(t)
		tx1 := begin(t, ctx, tg.DB)
		var r lkRow
		if err := tx1.Clauses(lockplugin.ForUpdate()).First(&r, 1).Error; err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := tg.DB.WithContext(ctx).Transaction(func(tx2 *gorm.DB) error {
			return tx2.Clauses(lockplugin.ForUpdate(lockplugin.NoWait)).First(&r, 1).Error
		})
		elapsed := time.Since(start)
		if !errors.Is(err, lockplugin.ErrLockNotAvailable) {
			t.Fatalf("want ErrLockNotAvailable, got %v", err)
		}
		var ue *dialects.LockNotAvailableError
		if !errors.As(err, &ue) || ue.Dialect != tg.Dialect.String() {
			t.Fatalf("want a *LockNotAvailableError naming %s, got %#v", tg.Dialect, err)
		}
		switch tg.Dialect.Kind {
		case dialects.Postgres:
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "55P03" {
				t.Fatalf("want the driver's *pgconn.PgError 55P03 inside, got %v", err)
			}
		case dialects.MySQL, dialects.MariaDB:
			var me *mysql.MySQLError
			if !errors.As(err, &me) || (me.Number != 3572 && me.Number != 1205) {
				t.Fatalf("want the driver's *mysql.MySQLError 3572 or 1205 inside, got %v", err)
			}
		case dialects.SQLServer:
			var se mssql.Error
			if !errors.As(err, &se) || se.Number != 1222 {
				t.Fatalf("want the driver's mssql.Error 1222 inside, got %v", err)
			}
		}
		// Waiting would have taken PostgreSQL forever and MariaDB
		// innodb_lock_wait_timeout (50 s by default).
		if elapsed > 5*time.Second {
			t.Fatalf("NOWAIT took %v", elapsed)
		}
		t.Logf("NOWAIT refused in %v: %v", elapsed, err)
	})
}

// TestNoWaitEveryReadPath: every way GORM reads rows reports a NOWAIT
// refusal as ErrLockNotAvailable, not only First. Rows and Scan read the
// rows after the plugin's callbacks; where the server reports the refusal
// only after the column list (MySQL, MariaDB), they get the driver's own
// error, which dialects.IsLockNotAvailable still recognises.
func TestNoWaitEveryReadPath(t *testing.T) {
	eachServer(t, func(t *testing.T, tg *testdb.Target) {
		ctx := liveContext(t)
		tg.Reset(t, &lkJob{}, &lkCompany{})
		job := lkJob{ID: 1, State: "queued", Company: lkCompany{Name: "acme"}}
		if err := tg.DB.WithContext(ctx).Create(&job).Error; err != nil {
			t.Fatal(err)
		}
		tx1 := begin(t, ctx, tg.DB)
		if err := tx1.Clauses(lockplugin.ForUpdate()).Find(&[]lkJob{}).Error; err != nil {
			t.Fatal(err)
		}
		for _, p := range lockedReadPaths {
			if p.name == "Count" && tg.Is(dialects.Postgres) {
				continue // PostgreSQL refuses FOR UPDATE with an aggregate
			}
			err := tg.DB.WithContext(ctx).Transaction(func(tx2 *gorm.DB) error {
				return p.read(tx2, lockplugin.ForUpdate(lockplugin.NoWait))
			})
			switch {
			case errors.Is(err, lockplugin.ErrLockNotAvailable):
			case p.streamed && dialects.IsLockNotAvailable(err):
				t.Logf("%s on %s: the driver's own error, as documented: %v", p.name, tg.Dialect, err)
			default:
				t.Errorf("%s: want ErrLockNotAvailable, got %v", p.name, err)
			}
		}
	})
}

// TestSkipLocked: with row 1 locked, SKIP LOCKED over rows 1-4 returns
// 2, 3, 4, through the classic API and the generics API.
func TestSkipLocked(t *testing.T) {
	eachServer(t, func(t *testing.T, tg *testdb.Target) {
		if err := tg.Dialect.Require(dialects.SkipLocked); err != nil {
			t.Fatalf("the servers under test all support SKIP LOCKED: %v", err)
		}
		ctx := liveContext(t)
		tx1 := begin(t, ctx, tg.DB)
		var r lkRow
		if err := tx1.Clauses(lockplugin.ForUpdate()).First(&r, 1).Error; err != nil {
			t.Fatal(err)
		}
		want := []int64{2, 3, 4}

		var rows []lkRow
		err := tg.DB.WithContext(ctx).Transaction(func(tx2 *gorm.DB) error {
			return tx2.Clauses(lockplugin.ForUpdate(lockplugin.SkipLocked)).
				Where("id BETWEEN ? AND ?", 1, 4).Order("id").Find(&rows).Error
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := rowIDs(rows); !equalIDs(got, want) {
			t.Fatalf("SKIP LOCKED returned %v, want %v", got, want)
		}

		err = tg.DB.WithContext(ctx).Transaction(func(tx2 *gorm.DB) error {
			rows, err = gorm.G[lkRow](tx2, lockplugin.ForUpdate(lockplugin.SkipLocked)).
				Where("id BETWEEN ? AND ?", 1, 4).Order("id").Find(ctx)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := rowIDs(rows); !equalIDs(got, want) {
			t.Fatalf("generics SKIP LOCKED returned %v, want %v", got, want)
		}
	})
}

// TestPlainReadNotBlocked: a read without a lock goes straight past a row
// held FOR UPDATE. On SQL Server that holds with READ_COMMITTED_SNAPSHOT
// on; with it off a plain READ COMMITTED read of a row under ForUpdate's
// exclusive (XLOCK) lock may wait, as it would for an uncommitted UPDATE
// (README, SQL Server), so there the test asks only where RCSI is on.
func TestPlainReadNotBlocked(t *testing.T) {
	eachServer(t, func(t *testing.T, tg *testdb.Target) {
		ctx := liveContext(t)
		if tg.Is(dialects.SQLServer) {
			var rcsi bool
			if err := tg.Plain.WithContext(ctx).Raw("SELECT is_read_committed_snapshot_on FROM sys.databases WHERE name = DB_NAME()").Scan(&rcsi).Error; err != nil {
				t.Fatal(err)
			}
			if !rcsi {
				t.Log("SQL Server without READ_COMMITTED_SNAPSHOT: a plain read may wait for ForUpdate's exclusive lock (documented); not asked")
				return
			}
		}
		tx1 := begin(t, ctx, tg.DB)
		var r lkRow
		if err := tx1.Clauses(lockplugin.ForUpdate()).Find(&[]lkRow{}).Error; err != nil {
			t.Fatal(err)
		}
		// A blocked read would run into the context's deadline.
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := tg.DB.WithContext(rctx).First(&r, 1).Error; err != nil {
			t.Fatalf("plain read while the row is locked: %v", err)
		}
		if err := tg.DB.WithContext(rctx).Transaction(func(tx2 *gorm.DB) error {
			return tx2.First(&r, 1).Error
		}); err != nil {
			t.Fatalf("plain read in a transaction while the row is locked: %v", err)
		}
	})
}

// TestLockOutsideTransactionLive: outside a transaction the lock is refused
// on every database, before anything is sent.
func TestLockOutsideTransactionLive(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		var r lkRow
		err := tg.DB.WithContext(t.Context()).Clauses(lockplugin.ForUpdate()).First(&r, 1).Error
		want := lockplugin.ErrNotInTransaction
		if tg.Is(dialects.SQLite) {
			want = lockplugin.ErrUnsupported
		}
		if !errors.Is(err, want) {
			t.Fatalf("want %v, got %v", want, err)
		}
	})
}

func rowIDs(rows []lkRow) []int64 {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
