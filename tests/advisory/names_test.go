package advisory_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// MariaDB and MySQL end a GET_LOCK name at its first NUL: "job\x00A" and
// "job\x00B" are one lock there. The server shows it first (the two
// names exclude each other through GET_LOCK directly); advisory must then
// refuse such names before anything is sent, so they are never one lock.
func TestNULNamesRefusedOnMySQL(t *testing.T) {
	tg := testdb.Get(t, testdb.MySQL)
	ctx := context.Background()
	a, b := "i12-nul\x00A", "i12-nul\x00B"

	// The server, asked directly: the second name is busy while the first
	// is held by another session.
	c1, err := tg.Plain.DB()
	require.NoError(t, err)
	s1, err := c1.Conn(ctx)
	require.NoError(t, err)
	defer s1.Close()
	s2, err := c1.Conn(ctx)
	require.NoError(t, err)
	defer s2.Close()
	var got1, got2 int
	require.NoError(t, s1.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", a).Scan(&got1))
	require.NoError(t, s2.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", b).Scan(&got2))
	_, _ = s1.ExecContext(ctx, "SELECT RELEASE_LOCK(?)", a)
	_, _ = s2.ExecContext(ctx, "SELECT RELEASE_LOCK(?)", b)
	t.Logf("%s: GET_LOCK(%q) = %d, then GET_LOCK(%q) on another session = %d", tg.Name, a, got1, b, got2)
	require.Truef(t, got1 == 1 && got2 == 0, "the server kept the names apart: the test cannot fail")

	refused := 0
	for _, name := range []string{a, b, "\x00", "i12-nul\x00"} {
		err := advisory.With(ctx, tg.DB, name, notRun(t))
		require.Errorf(t, err, "%q accepted", name)
		require.Containsf(t, err.Error(), "NUL", "%q: %v", name, err)
		_, err = advisory.Acquire(ctx, tg.DB, name)
		require.Errorf(t, err, "Acquire(%q) accepted", name)
		refused++
	}
	t.Logf("%s: %d NUL names refused before any SQL", tg.Name, refused)
}

// Error messages quote at most 64 bytes of a name, and its length.
func TestLongNameErrorIsCapped(t *testing.T) {
	tg := testdb.Get(t, testdb.MySQL)
	name := "i12-long-" + strings.Repeat("x", 1<<20)
	err := advisory.With(context.Background(), tg.DB, name, notRun(t), advisory.WaitAtMost(0))
	require.Error(t, err)
	t.Logf("%s: a %d-byte name: %d-byte error %.200q", tg.Name, len(name), len(err.Error()), err.Error())
	require.Lessf(t, len(err.Error()), 1024, "a %d-byte name made a %d-byte error", len(name), len(err.Error()))
	require.Containsf(t, err.Error(), "bytes)", "the error does not say how long the name was: %.300s", err.Error())
}

// Cancelling a MySQL wait kills the server thread with KILL QUERY on a
// connection outside the pool: with the pool exhausted (the waiter holds
// its only connection) the cancellation still ends at once, and the
// server's thread stops waiting.
func TestMySQLCancelWithExhaustedPool(t *testing.T) {
	tg := testdb.Get(t, testdb.MySQL)
	name := testdb.Unique(t, "i12")
	release := hold(t, tg.DB, name, nil)
	waiters := waiterPool(t, tg)
	waiters.SQL.SetMaxOpenConns(1)

	const rounds = 3
	for i := 0; i < rounds; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- advisory.With(ctx, waiters.DB, name, notRun(t)) }()
		eventually(t, 5*time.Second, "the waiter never queued", func() bool { return waiting(t, tg, name) == 1 })
		start := time.Now()
		cancel()
		err := <-done
		took := time.Since(start)
		require.ErrorIs(t, err, context.Canceled)
		eventually(t, 2*time.Second, "the cancelled wait is still queued on the server", func() bool { return waiting(t, tg, name) == 0 })
		t.Logf("%s, pool of 1 connection: round %d, the cancelled wait returned in %v", tg.Name, i, took)
		// The pool's 10 s of old would show here; a second is a generous bound.
		require.Lessf(t, took, 5*time.Second, "the cancellation queued for the exhausted pool")
	}
	require.NoError(t, release())
	require.NoError(t, advisory.With(context.Background(), waiters.DB, name, func(*gorm.DB) error { return nil }, advisory.WaitAtMost(time.Second)))

}

// With the usual idiom (context.Background() and db.WithContext(r.Context()))
// an ended db context stops With and Acquire before any SQL and fn does not
// run; one that ends during the wait ends the wait.
func TestCancelledDBContextStopsWith(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		bg := context.Background()
		rctx, cancel := context.WithCancel(bg)
		cancel()
		name := testdb.Unique(t, "i12")
		ran := 0
		err := advisory.With(bg, tg.DB.WithContext(rctx), name, func(*gorm.DB) error { ran++; return nil })
		if !tg.Dialect.Supports(dialects.AdvisoryLock) {
			require.ErrorIs(t, err, lockplugin.ErrUnsupported)
			require.Zero(t, ran)
			return
		}
		require.ErrorIs(t, err, context.Canceled)
		_, err = advisory.Acquire(bg, tg.DB.WithContext(rctx), name)
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, ran, "fn ran under an ended db context")
		require.Zero(t, holder(t, tg, name), "the lock was taken under an ended db context")

		// Ended during the wait.
		release := hold(t, tg.DB, name, nil)
		rctx, cancel = context.WithCancel(bg)
		done := make(chan error, 1)
		go func() {
			done <- advisory.With(bg, tg.DB.WithContext(rctx), name, func(*gorm.DB) error { ran++; return nil })
		}()
		eventually(t, 5*time.Second, "the waiter never queued", func() bool { return waiting(t, tg, name) >= 1 || tg.Dialect.IsMySQLFamily() })
		time.Sleep(50 * time.Millisecond) // MySQL cannot tell this wait apart: give it time to start
		cancel()
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("With kept waiting after its db context ended")
		}
		require.ErrorIs(t, err, context.Canceled)
		// The server ends the cancelled wait on its own schedule (a
		// backend whose client closed the connection may still be queued).
		eventually(t, 2*time.Second, "a cancelled wait is still queued", func() bool { return waiting(t, tg, name) == 0 })
		require.NoError(t, release())
		require.Zero(t, ran, "fn ran")
		eventually(t, 2*time.Second, "held after both gave up", func() bool { return holder(t, tg, name) == 0 })
		t.Logf("%s: an ended db context stopped With and Acquire before any SQL, and a wait", tg.Name)
	})
}

// A GET_LOCK wait ended by someone else's KILL QUERY, nudged around the
// holder's release: the wait may come back granted, NULL or with an error,
// and whatever it was, once both sides are done no session holds the name
// (advisory releases every hold its session might have before pooling the
// connection). Counted over the trials.
func TestMySQLKillQueryRaceLeavesNothingHeld(t *testing.T) {
	tg := testdb.Get(t, testdb.MySQL)
	waiters := waiterPool(t, tg)
	ctx := context.Background()
	hdb, err := tg.Plain.DB()
	require.NoError(t, err)
	hc, err := hdb.Conn(ctx)
	require.NoError(t, err)
	defer hc.Close()
	const trials = 40
	var granted, interrupted, failed, leaked int
	for i := 0; i < trials; i++ {
		name := fmt.Sprintf("i12-kill-%d-%d", i, time.Now().UnixNano())
		var got int
		require.NoError(t, hc.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", name).Scan(&got))
		require.Equal(t, 1, got)
		type result struct {
			l   *advisory.Lock
			err error
		}
		done := make(chan result, 1)
		go func() {
			l, err := advisory.Acquire(ctx, waiters.DB, name, advisory.WaitAtMost(5*time.Second))
			done <- result{l, err}
		}()
		var id int64
		eventually(t, 5*time.Second, "the waiter never queued", func() bool {
			_ = tg.Plain.Raw("SELECT COALESCE(MAX(ID), 0) FROM information_schema.PROCESSLIST WHERE "+userLockWait(tg)+" AND DB = ?", waiterDB).Scan(&id).Error
			return id != 0
		})
		offset := time.Duration(i%9-4) * 100 * time.Microsecond
		killed := make(chan struct{})
		go func() {
			defer close(killed)
			if offset > 0 {
				time.Sleep(offset)
			}
			_ = tg.Plain.Exec(fmt.Sprintf("KILL QUERY %d", id)).Error
		}()
		if offset < 0 {
			time.Sleep(-offset)
		}
		_, err := hc.ExecContext(ctx, "SELECT RELEASE_LOCK(?)", name)
		require.NoError(t, err)
		r := <-done
		// The KILL has landed before the next trial (whose wait may run on
		// the same connection, and so the same thread id).
		<-killed
		if r.err == nil {
			granted++
			// A KILL that lands after the grant interrupts the release
			// instead; its connection is then closed, which frees the lock.
			if err := r.l.Release(ctx); err != nil {
				interrupted++
			}
		} else {
			failed++
		}
		// Both sides are done; a session closed just now may take the
		// server a moment to end.
		deadline := time.Now().Add(time.Second)
		for {
			var holder sql.NullInt64
			require.NoError(t, tg.Plain.Raw("SELECT IS_USED_LOCK(?)", name).Scan(&holder).Error)
			if !holder.Valid {
				break
			}
			if time.Now().After(deadline) {
				leaked++
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Logf("%s: %d trials, KILL QUERY against the release: %d granted (%d releases interrupted by a late KILL), %d failed, %d names left held",
		tg.Name, trials, granted, interrupted, failed, leaked)
	require.Zero(t, leaked)
}
