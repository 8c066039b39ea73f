package advisory_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

func noop(*gorm.DB) error { return nil }

func notRun(t *testing.T) func(*gorm.DB) error {
	return func(*gorm.DB) error { t.Error("fn ran without the lock"); return nil }
}

func TestTimeouts(t *testing.T) {
	live(t, func(t *testing.T, tg *testdb.Target) {
		ctx := context.Background()
		name := lockName(t)
		release := hold(t, tg.DB, name, nil)

		start := time.Now()
		err := advisory.With(ctx, tg.DB, name, notRun(t), advisory.WaitAtMost(0))
		tryElapsed := time.Since(start)
		require.ErrorIs(t, err, advisory.ErrTimeout, "Timeout(0) while held")
		require.Truef(t, tryElapsed < 500*time.Millisecond, "Timeout(0) took %v", tryElapsed)

		start = time.Now()
		err = advisory.With(ctx, tg.DB, name, notRun(t), advisory.WaitAtMost(300*time.Millisecond))
		waitElapsed := time.Since(start)
		require.ErrorIs(t, err, advisory.ErrTimeout, "Timeout(300ms) while held")
		atLeast := 250 * time.Millisecond
		if tg.Is(dialects.MySQL, dialects.MariaDB) {
			atLeast = 950 * time.Millisecond // GET_LOCK waits whole seconds, rounding up
		}
		require.Truef(t, waitElapsed >= atLeast && waitElapsed < 3*time.Second, "Timeout(300ms) gave up after %v, want %v..3s", waitElapsed, atLeast)
		t.Logf("%s: Timeout(0) answered in %v, Timeout(300ms) in %v", tg.Name, tryElapsed, waitElapsed)

		require.NoError(t, release(), "holder")
		for _, d := range []time.Duration{0, 300 * time.Millisecond} {
			ran := false
			require.NoError(t, advisory.With(ctx, tg.DB, name, func(*gorm.DB) error { ran = true; return nil }, advisory.WaitAtMost(d)), "after release")
			require.Truef(t, ran, "fn did not run")
		}
		require.Truef(t, holder(t, tg, name) == 0, "lock still held after With returned")
	})
}

func TestCounter(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		ctx := context.Background()
		cfg := scenario.Config{Workers: 8, Rounds: 25, Prefix: prefix + "_" + tg.Name}
		if !tg.Dialect.Supports(dialects.AdvisoryLock) {
			res, err := scenario.AdvisoryCounter(ctx, tg.DB, cfg)
			require.NoError(t, err, "scenario")
			require.Truef(t, strings.Contains(res.Unsupported, "advisory lock is not supported on "+tg.Dialect.String()), "Unsupported = %q", res.Unsupported)
			return
		}
		// Without the lock the same read-modify-write loses increments.
		var base scenario.Result
		for attempt := 0; attempt < 3 && base.Lost == 0; attempt++ {
			var err error
			base, err = scenario.AdvisoryCounterUnprotected(ctx, tg.Plain, cfg)
			require.NoError(t, err, "unprotected scenario")
		}
		require.Truef(t, base.Lost > 0, "the unprotected baseline lost nothing (%s): the test could not fail", base.Observed)

		res, err := scenario.AdvisoryCounter(ctx, tg.DB, cfg)
		require.NoError(t, err, "scenario")
		require.Truef(t, res.Unsupported == "" && res.OK && res.Lost == 0, "advisory lock: %s (%+v)", res.Observed, res)
		t.Logf("%s: unprotected %s; advisory lock %s in %v (%.0f increments/s)", tg.Name, base.Observed, res.Observed, res.Elapsed, res.OpsPerSecond())
	})
}

func TestErrorAndPanicRelease(t *testing.T) {
	live(t, func(t *testing.T, tg *testdb.Target) {
		ctx := context.Background()
		name := lockName(t)
		boom := errors.New("boom")
		err := advisory.With(ctx, tg.DB, name, func(conn *gorm.DB) error {
			require.Truef(t, holder(t, tg, name) != 0, "not held inside fn")
			return boom
		})
		require.ErrorIs(t, err, boom, "fn's error")
		require.Truef(t, holder(t, tg, name) == 0, "held after fn returned an error")
		require.NoError(t, advisory.With(ctx, tg.DB, name, noop, advisory.WaitAtMost(0)), "after fn's error")

		func() {
			defer func() {
				if p := recover(); p != "kaboom" {
					t.Fatalf("recovered %v, want fn's panic", p)
				}
			}()
			_ = advisory.With(ctx, tg.DB, name, func(*gorm.DB) error { panic("kaboom") })
			t.Error("With returned normally after a panic")
		}()
		require.Truef(t, holder(t, tg, name) == 0, "held after fn panicked")
		require.NoError(t, advisory.With(ctx, tg.DB, name, noop, advisory.WaitAtMost(0)), "after fn's panic")
	})
}

func TestKilledHolderFreesLock(t *testing.T) {
	live(t, func(t *testing.T, tg *testdb.Target) {
		ctx := context.Background()
		name := lockName(t)
		holderTG := testdb.Open(t, tg.Kind(), nil)
		ids := make(chan int64, 1)
		release := hold(t, holderTG.DB, name, func(conn *gorm.DB) {
			id, err := querySessionID(tg, conn)
			if err != nil {
				t.Errorf("holder's session id: %v", err)
			}
			ids <- id
		})
		id := <-ids
		waiters := waiterPool(t, tg)

		acquired := make(chan time.Time, 1)
		go func() {
			err := advisory.With(ctx, waiters.DB, name, func(*gorm.DB) error { acquired <- time.Now(); return nil }, advisory.WaitAtMost(10*time.Second))
			if err != nil {
				t.Errorf("second acquirer: %v", err)
				acquired <- time.Time{}
			}
		}()
		eventually(t, 5*time.Second, "the second acquirer never queued", func() bool { return waiting(t, tg, name) == 1 })
		killedAt := time.Now()
		kill(t, tg, id)
		got := <-acquired
		require.Truef(t, !got.IsZero(), "the second acquirer failed")
		after := got.Sub(killedAt)
		t.Logf("%s: acquired %v after the holder's session was killed", tg.Name, after)
		require.Truef(t, after < time.Second, "acquired only %v after the kill", after)

		// The holder learns at release that its session is gone; its pool
		// carries on with a fresh connection.
		require.Truef(t, release() != nil, "the killed holder's release reported success")
		require.NoError(t, advisory.With(ctx, holderTG.DB, name, noop, advisory.WaitAtMost(time.Second)), "holder's pool after the kill")
	})
}

func TestCancelledWaitLeavesNothing(t *testing.T) {
	live(t, func(t *testing.T, tg *testdb.Target) {
		name := lockName(t)
		release := hold(t, tg.DB, name, nil)
		holderID := holder(t, tg, name)
		waiters := waiterPool(t, tg)

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- advisory.With(ctx, waiters.DB, name, notRun(t)) }()
		eventually(t, 5*time.Second, "the waiter never queued", func() bool { return waiting(t, tg, name) == 1 })
		cancel()
		require.ErrorIs(t, <-done, context.Canceled, "cancelled wait")
		eventually(t, 2*time.Second, "a cancelled wait is still queued", func() bool { return waiting(t, tg, name) == 0 })
		require.Truef(t, holder(t, tg, name) == holderID, "the holder changed while the waiter was cancelled")

		require.NoError(t, release(), "holder")
		require.Truef(t, holder(t, tg, name) == 0, "held after the holder released and the waiter was cancelled")
		require.Truef(t, waiting(t, tg, name) == 0, "a waiter is left")
		require.NoError(t, advisory.With(context.Background(), waiters.DB, name, noop, advisory.WaitAtMost(0)), "after cancel")
	})
}

type advCommit struct {
	ID int
	N  int
}

func TestCommitInsideFnKeepsLock(t *testing.T) {
	live(t, func(t *testing.T, tg *testdb.Target) {
		ctx := context.Background()
		name := lockName(t)
		table := prefix + "_commit_" + tg.Name
		require.NoError(t, tg.DB.Migrator().DropTable(table), "drop")
		require.NoError(t, tg.DB.Table(table).Migrator().CreateTable(&advCommit{}), "create")

		err := advisory.With(ctx, tg.DB, name, func(conn *gorm.DB) error {
			lockSession := sessionID(t, tg, conn)
			var txSession int64
			require.NoError(t, conn.Transaction(func(tx *gorm.DB) error {
				txSession = sessionID(t, tg, tx)
				return tx.Table(table).Create(&advCommit{ID: 1, N: 1}).Error
			}), "transaction inside fn")
			require.Truef(t, lockSession == txSession, "fn's transaction ran on session %d, the lock is on %d", txSession, lockSession)

			// Committed, visible to others, and the lock still held.
			var n int64
			require.NoError(t, tg.Plain.Table(table).Count(&n).Error, "count")
			require.Truef(t, n == 1, "the transaction inside fn did not commit")
			require.Truef(t, holder(t, tg, name) != 0, "COMMIT inside fn released the lock")
			other := advisory.With(context.Background(), tg.Plain, name, notRun(t), advisory.WaitAtMost(0))
			require.ErrorIs(t, other, advisory.ErrTimeout, "another session after a COMMIT inside fn")
			return nil
		})
		require.NoError(t, err, "With")
		require.Truef(t, holder(t, tg, name) == 0, "still held after With")
	})
}

func TestNestedSameNameFailsAtOnce(t *testing.T) {
	live(t, func(t *testing.T, tg *testdb.Target) {
		name := lockName(t)
		err := advisory.With(context.Background(), tg.DB, name, func(conn *gorm.DB) error {
			// Bounded, so that a regression fails here instead of hanging.
			ctx, cancel := context.WithTimeout(conn.Statement.Context, 2*time.Second)
			defer cancel()
			start := time.Now()
			require.ErrorIs(t, advisory.With(ctx, tg.DB, name, notRun(t)), advisory.ErrReentrant, "nested through ctx")
			bare, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel2()
			require.ErrorIs(t, advisory.With(bare, conn, name, notRun(t)), advisory.ErrReentrant, "nested through conn")
			// At once: well before the 2 s a deadlock would have run into.
			require.Truef(t, time.Since(start) < time.Second, "nesting took %v", time.Since(start))
			// Another name nests fine.
			return advisory.With(conn.Statement.Context, tg.DB, name+"-inner", noop, advisory.WaitAtMost(0))
		})
		require.NoError(t, err, "With")
	})
}

func TestSQLiteUnsupported(t *testing.T) {
	tg := testdb.Get(t, testdb.SQLite)
	ran := false
	err := advisory.With(context.Background(), tg.DB, lockName(t), func(*gorm.DB) error { ran = true; return nil })
	require.ErrorIs(t, err, lockplugin.ErrUnsupported, "With")
	require.Truef(t, strings.Contains(err.Error(), "SQLite"), "error does not name SQLite: %v", err)
	require.Truef(t, !ran, "fn ran unserialised")
	_, err = advisory.Acquire(context.Background(), tg.DB, lockName(t))
	require.ErrorIs(t, err, lockplugin.ErrUnsupported, "Acquire")
	err = tg.DB.Transaction(func(tx *gorm.DB) error { return advisory.WithTx(tx, lockName(t)) })
	require.ErrorIs(t, err, lockplugin.ErrUnsupported, "WithTx")
	require.Truef(t, !advisory.Supported(tg.DB), "Supported(SQLite)")
}

// Names reach MySQL and MariaDB untouched: the server decides what is too
// long (MySQL: 64 characters; MariaDB 10.11: 192), and says so itself.
func TestLongNamesAreTheServersBusiness(t *testing.T) {
	tg := testdb.Get(t, testdb.MySQL)
	ctx := context.Background()
	name65 := (prefix + "-long-" + strings.Repeat("x", 64))[:65]
	var serverErr *mysqldriver.MySQLError
	if tg.Is(dialects.MySQL) {
		err := advisory.With(ctx, tg.DB, name65, notRun(t))
		require.Truef(t, errors.As(err, &serverErr), "65 characters on MySQL: %v, want the server's error", err)
		t.Logf("MySQL, 65 characters: %v", err)
		return
	}
	// MariaDB takes 65 characters, and does not truncate them into the
	// 64-character prefix's lock.
	err := advisory.With(ctx, tg.DB, name65, func(*gorm.DB) error {
		require.Truef(t, holder(t, tg, name65) != 0, "65-character lock not held")
		require.Truef(t, holder(t, tg, name65[:64]) == 0, "the name was truncated")
		return advisory.With(ctx, tg.Plain, name65[:64], noop, advisory.WaitAtMost(0))
	}, advisory.WaitAtMost(0))
	require.NoError(t, err, "65 characters on MariaDB")
	long := (prefix + "-long-" + strings.Repeat("x", 200))[:193]
	err = advisory.With(ctx, tg.DB, long, notRun(t))
	require.Truef(t, errors.As(err, &serverErr) && serverErr.Number == 1059, "193 characters: %v, want the server's ER_TOO_LONG_IDENT", err)
	t.Logf("MariaDB, 193 characters: %v", err)
}

func TestAcquireRelease(t *testing.T) {
	live(t, func(t *testing.T, tg *testdb.Target) {
		ctx, cancel := context.WithCancel(context.Background())
		name := lockName(t)
		l, err := advisory.Acquire(ctx, tg.DB, name, advisory.WaitAtMost(time.Second))
		require.NoError(t, err, "Acquire")
		if h := holder(t, tg, name); h != -1 { // SQL Server does not say who
			require.Truef(t, h == sessionID(t, tg, l.DB()), "the lock is on session %d, Lock.DB on another", h)
		}
		cancel() // the acquisition's context ends; the lock and its DB live on
		require.NoError(t, l.DB().Exec("SELECT 1").Error, "Lock.DB after the acquisition's ctx ended")
		require.ErrorIs(t, advisory.With(context.Background(), tg.DB, name, notRun(t), advisory.WaitAtMost(0)), advisory.ErrTimeout, "while acquired")
		require.NoError(t, l.Release(ctx), "Release")
		require.NoError(t, l.Release(ctx), "second Release by the same handle: a no-op")
		require.Truef(t, holder(t, tg, name) == 0, "held after Release")
	})
}

func TestWithTx(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		ctx := context.Background()
		name := lockName(t)
		if !tg.Is(dialects.Postgres, dialects.SQLServer) {
			err := tg.DB.Transaction(func(tx *gorm.DB) error { return advisory.WithTx(tx, name) })
			require.ErrorIs(t, err, lockplugin.ErrUnsupported, "WithTx on "+tg.Name)
			return
		}
		require.Truef(t, advisory.WithTx(tg.DB, name) != nil, "WithTx outside a transaction")

		err := tg.DB.Transaction(func(tx *gorm.DB) error {
			if tg.Is(dialects.Postgres) {
				require.NoError(t, tx.Exec("SET LOCAL lock_timeout = '7s'").Error, "SET LOCAL")
			}
			require.NoError(t, advisory.WithTx(tx, name, advisory.WaitAtMost(time.Second)), "WithTx")
			require.NoError(t, advisory.WithTx(tx, name, advisory.WaitAtMost(0)), "WithTx again in its transaction")
			if tg.Is(dialects.Postgres) {
				var lt string
				require.NoError(t, tx.Raw("SHOW lock_timeout").Scan(&lt).Error, "SHOW")
				require.Truef(t, lt == "7s", "WithTx left lock_timeout at %q", lt)
			}
			require.Truef(t, holder(t, tg, name) != 0, "not held")
			// Busy for everybody else until the transaction ends.
			require.ErrorIs(t, advisory.With(ctx, tg.Plain, name, notRun(t), advisory.WaitAtMost(0)), advisory.ErrTimeout, "With while held")
			return tg.Plain.Transaction(func(tx2 *gorm.DB) error {
				require.ErrorIs(t, advisory.WithTx(tx2, name, advisory.WaitAtMost(0)), advisory.ErrTimeout, "WithTx Timeout(0) while held")
				start := time.Now()
				require.ErrorIs(t, advisory.WithTx(tx2, name, advisory.WaitAtMost(300*time.Millisecond)), advisory.ErrTimeout, "WithTx Timeout(300ms) while held")
				require.Truef(t, time.Since(start) >= 250*time.Millisecond, "gave up after %v", time.Since(start))
				return errors.New("roll back") // a failed wait aborts a PostgreSQL transaction
			})
		})
		require.Truef(t, err != nil && strings.Contains(err.Error(), "roll back"), "err = %v", err)
		require.Truef(t, holder(t, tg, name) == 0, "transaction lock outlived its transaction")
		require.NoError(t, advisory.With(ctx, tg.DB, name, noop, advisory.WaitAtMost(0)), "after the transaction")
	})
}
