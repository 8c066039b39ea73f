package lease_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// row reads name's row of the test table: owner, expires_at minus the
// database's now (ms), and fence.
func row(t *testing.T, tg *testdb.Target, name string) (owner string, left, fence int64) {
	t.Helper()
	q := "SELECT owner, expires_at - " + drivers.For(tg.Dialect).NowMillis() + ", fence FROM " + drivers.For(tg.Dialect).QuoteIdent(table) + " WHERE lock_name = ?"
	r := tg.Plain.Raw(q, name).Row()
	noErr(t, r.Scan(&owner, &left, &fence), "reading the lease row")
	return owner, left, fence
}

// TestTableStoreIdempotentAcquire: an acquire repeated by the owner that
// holds the lease (a client retry after a lost reply) gets the lease and
// the same fence back, with the new TTL; a stranger is still refused; a
// repeated release reports false without error; an acquire after expiry or
// release bumps the fence even for the same owner. The baseline, the store
// before this change, refuses the retry: the owner holds a lease it was
// told it did not get (a ghost, until the TTL ends).
func TestTableStoreIdempotentAcquire(t *testing.T) {
	ctx := context.Background()
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if _, ok := upsertAcquire[baselineKind(tg)]; ok {
			old := upsertStore(t, tg.Kind())
			name := uniqueName(t) + "-baseline"
			_, ok1, err := old.Acquire(ctx, name, "owner-a", 10*time.Second)
			noErr(t, err)
			_, ok2, err := old.Acquire(ctx, name, "owner-a", 10*time.Second)
			noErr(t, err)
			want(t, ok1 && !ok2, "baseline: first %v, retry %v; want the retry refused (the ghost this test exists for)", ok1, ok2)
			t.Logf("baseline (one upsert, no owner check): the retried acquire is refused, a ghost lease")
			_, _ = old.Release(ctx, name, "owner-a")
		}

		s := tableStore(t, tg.DB)
		name := uniqueName(t)
		f1, ok, err := s.Acquire(ctx, name, "owner-a", 2*time.Second)
		noErr(t, err)
		want(t, ok, "a free lease was refused")
		for i := range 3 {
			f, ok, err := s.Acquire(ctx, name, "owner-a", 10*time.Second)
			noErr(t, err)
			want(t, ok && f == f1, "retry %d by the holder: ok %v fence %d, want ok and fence %d", i, ok, f, f1)
		}
		_, left, _ := row(t, tg, name)
		want(t, left > 9000 && left <= 10000, "after the retry the lease ends in %d ms, want the retry's 10 s", left)
		_, ok, err = s.Acquire(ctx, name, "owner-b", 10*time.Second)
		noErr(t, err)
		want(t, !ok, "a stranger got a held lease")
		owner, _, fence := row(t, tg, name)
		want(t, owner == "owner-a" && fence == f1, "the stranger's refusal changed the row: %s %d", owner, fence)

		// A TTL-0 lease retried with a TTL gets that TTL, and back.
		f, ok, err := s.Acquire(ctx, name, "owner-a", 0)
		noErr(t, err)
		want(t, ok && f == f1, "TTL-0 retry: %v %d", ok, f)
		ok, err = s.Release(ctx, name, "owner-a")
		noErr(t, err)
		want(t, ok, "the holder's release failed")
		ok, err = s.Release(ctx, name, "owner-a")
		noErr(t, err)
		want(t, !ok, "a second release reported true")

		f2, ok, err := s.Acquire(ctx, name, "owner-a", 100*time.Millisecond)
		noErr(t, err)
		want(t, ok && f2 > f1, "acquire after release by the same owner: %v fence %d, want > %d", ok, f2, f1)
		time.Sleep(150 * time.Millisecond)
		f3, ok, err := s.Acquire(ctx, name, "owner-a", time.Second)
		noErr(t, err)
		want(t, ok && f3 > f2, "acquire after expiry by the same owner: %v fence %d, want > %d", ok, f3, f2)
		_, _ = s.Release(ctx, name, "owner-a")
		t.Logf("retries by the holder: same fence %d; after release %d, after expiry %d", f1, f2, f3)
	})
}

// baselineKind is the key of upsertAcquire for tg.
func baselineKind(tg *testdb.Target) dialects.Kind {
	if tg.Dialect.Kind == dialects.MySQL {
		return dialects.MariaDB
	}
	return tg.Dialect.Kind
}

// TestTableStoreRefusalIsReadOnly (PostgreSQL): 20 refused acquires leave
// the held row's physical version (ctid, xmin, xmax) as it was: no row
// lock, so no transaction id and no WAL flush. The baseline, the upsert
// the store used before, locks the row on every refusal (xmax becomes the
// refusing transaction).
func TestTableStoreRefusalIsReadOnly(t *testing.T) {
	ctx := context.Background()
	tg := testdb.Get(t, testdb.Postgres)
	version := func(name string) string {
		var v string
		noErr(t, tg.Plain.Raw(`SELECT ctid::text || ' ' || xmin::text || ' ' || xmax::text FROM `+drivers.For(tg.Dialect).QuoteIdent(table)+` WHERE lock_name = ?`, name).Row().Scan(&v))
		return v
	}
	refuse := func(acquire func(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error), name string) (changed int) {
		for i := range 20 {
			before := version(name)
			_, ok, err := acquire(ctx, name, fmt.Sprintf("stranger-%d", i), 10*time.Second)
			noErr(t, err)
			want(t, !ok, "a stranger got a held lease")
			if version(name) != before {
				changed++
			}
		}
		return changed
	}

	old := upsertStore(t, testdb.Postgres)
	name := uniqueName(t) + "-baseline"
	_, ok, err := old.Acquire(ctx, name, "holder", 10*time.Second)
	noErr(t, err)
	want(t, ok, "baseline: a free lease was refused")
	base := refuse(old.Acquire, name)
	t.Logf("baseline (upsert): %d of 20 refusals wrote to the row (locked it)", base)
	want(t, base > 0, "the baseline's refusals left the row alone: the check cannot fail")

	s := tableStore(t, tg.DB)
	name = uniqueName(t)
	_, ok, err = s.Acquire(ctx, name, "holder", 10*time.Second)
	noErr(t, err)
	want(t, ok, "a free lease was refused")
	got := refuse(s.Acquire, name)
	t.Logf("table store: %d of 20 refusals wrote to the row", got)
	want(t, got == 0, "%d of 20 refusals wrote to the row", got)
	_, _ = s.Release(ctx, name, "holder")
}

// TestTableStoreRefusalTakesNoWriteLockSQLite: while another connection
// holds SQLite's write lock (a transaction begun IMMEDIATE that has
// written), a refused acquire answers "held" at once: it reads first and
// sends no write. The baseline, the upsert the store sent before, waits
// for the write lock like any writer, and fails when the busy timeout
// (300 ms here) runs out. Both on a pool of their own on the shared file.
func TestTableStoreRefusalTakesNoWriteLockSQLite(t *testing.T) {
	ctx := context.Background()
	tg := testdb.Open(t, testdb.SQLite, func(dsn string) string {
		return strings.Replace(dsn, "busy_timeout(20000)", "busy_timeout(300)", 1)
	})
	s := tableStore(t, tg.DB)
	old := upsertStoreOn(t, tg.DB, tg.SQL)
	name := uniqueName(t)
	_, ok, err := s.Acquire(ctx, name, "holder", time.Minute)
	noErr(t, err)
	want(t, ok, "a free lease was refused")
	defer func() { _, _ = s.Release(ctx, name, "holder") }()

	tx, err := tg.SQL.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock=immediate)
	noErr(t, err)
	_, err = tx.Exec(`UPDATE `+drivers.For(tg.Dialect).QuoteIdent(table)+` SET fence = fence WHERE lock_name = ?`, name+"-none")
	noErr(t, err, "taking the write lock")
	defer func() { _ = tx.Rollback() }()

	refuse := func(round string) {
		for i := range 10 {
			_, ok, err := s.Acquire(ctx, name, fmt.Sprintf("stranger-%d", i), 10*time.Second)
			noErr(t, err, round, ": a refusal while another connection holds the write lock")
			want(t, !ok, "a stranger got a held lease")
		}
	}
	refuse("before the baseline")
	for i := range 3 {
		_, ok, err := old.Acquire(ctx, name, fmt.Sprintf("stranger-%d", i), 10*time.Second)
		want(t, err != nil && !ok, "baseline %d: a refusal under another writer's lock answered %v, %v; want it to wait for the lock and fail", i, ok, err)
		t.Logf("baseline (upsert) %d under another writer's lock: %v", i, err)
	}
	refuse("after the baseline")
}

// TestTableStoreConcurrentNew: 6 goroutines on separate connections run
// sqlstore.New on a fresh table at once, behind a barrier, 10 rounds, on
// every database. The baseline runs the bare DDL the same way, and on
// PostgreSQL loses (CREATE TABLE IF NOT EXISTS fails with 23505, 42P07 or
// 42710 for some of the racers).
func TestTableStoreConcurrentNew(t *testing.T) {
	const racers, rounds = 6, 10
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		tableStore(t, tg.DB) // skips where the store is refused
		drop := func(tbl string) {
			noErr(t, tg.Plain.Exec("DROP TABLE IF EXISTS "+drivers.For(tg.Dialect).QuoteIdent(tbl)).Error, "dropping ", tbl)
		}
		race := func(tbl string, run func() error) (failed int, first error) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			start := make(chan struct{})
			for range racers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					if err := run(); err != nil {
						mu.Lock()
						failed++
						if first == nil {
							first = err
						}
						mu.Unlock()
					}
				}()
			}
			close(start)
			wg.Wait()
			return failed, first
		}
		dialector := map[dialects.Kind]string{dialects.Postgres: "postgres", dialects.MySQL: "mysql", dialects.MariaDB: "mysql", dialects.SQLite: "sqlite", dialects.SQLServer: "sqlserver"}[tg.Dialect.Kind]
		var baseFailed, baseRounds int
		var baseErr error
		for r := range rounds {
			tbl := fmt.Sprintf("i10b_new_base_%d_%d", r, time.Now().UnixNano())
			ddl, err := sqlstore.CreateTableSQL(dialector, sqlstore.Table(tbl))
			noErr(t, err)
			n, err := race(tbl, func() error { return tg.SQL.QueryRowContext(context.Background(), ddl).Scan() })
			if errors.Is(err, sqlNoRows) { // Scan on a statement without rows
				err = nil
			}
			if n > 0 && err != nil {
				baseFailed += n
				baseRounds++
				baseErr = err
			}
			drop(tbl)
		}
		t.Logf("baseline (bare DDL): %d of %d creations failed, in %d of %d rounds (last: %v)", baseFailed, racers*rounds, baseRounds, rounds, baseErr)
		if tg.Dialect.Kind == dialects.Postgres {
			want(t, baseFailed > 0, "the bare DDL never lost on PostgreSQL: the check cannot fail")
		}
		var failed int
		for r := range rounds {
			tbl := fmt.Sprintf("i10b_new_%d_%d", r, time.Now().UnixNano())
			n, err := race(tbl, func() error {
				_, err := sqlstore.New(tg.DB, sqlstore.Table(tbl))
				return err
			})
			if n > 0 {
				t.Errorf("round %d: %d of %d New failed: %v", r, n, racers, err)
			}
			failed += n
			s, err := sqlstore.New(tg.DB, sqlstore.Table(tbl), sqlstore.CreateTable(false))
			noErr(t, err)
			_, ok, err := s.Acquire(context.Background(), "n", "o", time.Second)
			noErr(t, err)
			want(t, ok, "the new table does not work")
			drop(tbl)
		}
		t.Logf("sqlstore.New: %d of %d failed over %d rounds", failed, racers*rounds, rounds)
	})
}

// TestTableStoreJoinsContexts: the context db carries when New is called
// bounds every call of the store, with the call's own: once it is
// cancelled, Acquire fails with context.Canceled and writes nothing, though
// the call's ctx is Background.
func TestTableStoreJoinsContexts(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		tableStore(t, tg.DB) // skips where the store is refused
		dbCtx, cancel := context.WithCancel(context.Background())
		s, err := sqlstore.New(tg.DB.WithContext(dbCtx), sqlstore.Table(table))
		noErr(t, err)
		name := uniqueName(t)
		_, ok, err := s.Acquire(context.Background(), name, "owner-a", time.Second)
		noErr(t, err)
		want(t, ok, "a free lease was refused")
		_, _ = s.Release(context.Background(), name, "owner-a")
		cancel()
		name = uniqueName(t)
		_, ok, err = s.Acquire(context.Background(), name, "owner-a", time.Second)
		want(t, !ok && errors.Is(err, context.Canceled), "Acquire after db's context was cancelled: %v %v, want context.Canceled", ok, err)
		_, err = s.Refresh(context.Background(), name, "owner-a", time.Second)
		want(t, errors.Is(err, context.Canceled), "Refresh: %v, want context.Canceled", err)
		var n int64
		noErr(t, tg.Plain.Raw("SELECT COUNT(*) FROM "+drivers.For(tg.Dialect).QuoteIdent(table)+" WHERE lock_name = ?", name).Row().Scan(&n))
		want(t, n == 0, "a cancelled Acquire wrote a row")
	})
}

var sqlNoRows = sql.ErrNoRows

// TestTableStoreOneStatementPerAcquire: on MariaDB/MySQL every acquire
// attempt is one statement, granted or refused, and the answers keep the
// contract: a new name gets a fence, a held one is refused without a
// change, the holder's retry gets its own fence back, and a released name
// goes to the next owner with a greater fence, each by the database's
// clock.
func TestTableStoreOneStatementPerAcquire(t *testing.T) {
	db, pool := countedDB(t, testdb.MySQL)
	tableStore(t, db) // skips where refused
	// Retention off: its background batch is a statement of its own.
	s, err := sqlstore.New(db, sqlstore.Table(table), sqlstore.Retention(-1))
	noErr(t, err)
	ctx := context.Background()
	name := testdb.Unique(t, namePrefix+"i27-one-stmt")
	// step checks one Acquire: one statement, ok as wanted, and the fence:
	// 0 when refused, same the one before, above it for a new grant.
	var last int64
	step := func(what, owner string, ttl time.Duration, wantOK bool, fenceIs string) {
		t.Helper()
		before := pool.n.Load()
		fence, ok, err := s.Acquire(ctx, name, owner, ttl)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := pool.n.Load() - before; n != 1 {
			t.Errorf("%s: %d statements, want 1", what, n)
		}
		good := map[string]bool{"none": fence == 0, "same": fence == last, "new": fence > last}[fenceIs]
		if ok != wantOK || !good {
			t.Errorf("%s: fence %d, ok %v; want %v and fence %s (last %d)", what, fence, ok, wantOK, fenceIs, last)
		}
		if ok {
			last = fence
		}
	}
	step("new name", "owner-a", time.Minute, true, "new")
	step("held by another owner", "owner-b", time.Minute, false, "none")
	step("the holder's retry", "owner-a", time.Minute, true, "same")
	if ok, err := s.Release(ctx, name, "owner-a"); err != nil || !ok {
		t.Fatalf("release: %v, %v", ok, err)
	}
	step("released: the next owner", "owner-b", 50*time.Millisecond, true, "new")
	step("held, short TTL", "owner-c", time.Minute, false, "none")
	time.Sleep(100 * time.Millisecond) // the database's clock passes the 50 ms expiry
	step("expired: taken over", "owner-c", 0, true, "new")
	step("no expiry: refused", "owner-a", time.Minute, false, "none")
	step("no expiry: the holder's retry", "owner-c", 0, true, "same")
}
