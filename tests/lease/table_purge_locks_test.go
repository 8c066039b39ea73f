package lease_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// purgeLog records the purge statements a store sends (its trace through
// GORM's logger), as the logger renders them: with their arguments
// inlined.
type purgeLog struct {
	mu    sync.Mutex
	stmts []string
}

func (l *purgeLog) LogMode(logger.LogLevel) logger.Interface { return l }
func (*purgeLog) Info(context.Context, string, ...any)       {}
func (*purgeLog) Warn(context.Context, string, ...any)       {}
func (*purgeLog) Error(context.Context, string, ...any)      {}
func (l *purgeLog) Trace(_ context.Context, _ time.Time, fc func() (string, int64), err error) {
	q, _ := fc()
	if err == nil && (strings.HasPrefix(q, "SELECT lock_name ") || strings.HasPrefix(q, "DELETE ")) {
		l.mu.Lock()
		l.stmts = append(l.stmts, q)
		l.mu.Unlock()
	}
}

// TestTablePurgeLocks: the purge locks no row it does not delete, on
// MariaDB (InnoDB) and TiDB. The table: 3000 names, 30 of them live
// leases (every 100th, from the 50th), 1470 purgeable (released, last
// granted an hour ago: every other name), the rest released a moment ago
// (kept). The sessions that meet the purge wait for a row lock at most
// 1 s (innodb_lock_wait_timeout, which TiDB's pessimistic locks obey too).
//
//   - Baseline: the single DELETE ... WHERE <purgeable> LIMIT 1000 that
//     MySQL and MariaDB sent before, left in an open transaction: on
//     InnoDB the Refresh of a live lease it scanned and did not delete
//     times out behind it, and so does the Acquire of a new name (the
//     gaps are locked too); and the statement, run while a live lease's
//     row is locked, times out on that row.
//   - The store's Purge(0) while a live lease's row is locked by another
//     transaction: it deletes all 1470 and waits for nothing, its
//     arguments bound (prepared statements) or inlined in the text
//     (interpolateParams=true).
//   - The store's statements of one batch (as it sent them), replayed in
//     an open transaction: the live leases' Refresh and a new name's
//     Acquire go through.
//
// On TiDB the baseline is what the store sends (one DELETE in BEGIN
// PESSIMISTIC), which locks only the rows it deletes.
func TestTablePurgeLocks(t *testing.T) {
	for _, kind := range []string{testdb.MySQL, testdb.TiDB} {
		t.Run(kind, func(t *testing.T) { purgeLocks(t, kind) })
	}
}

func purgeLocks(t *testing.T, kind string) {
	const names, liveEvery = 3000, 100
	ctx := context.Background()
	tg := testdb.Get(t, kind)
	tidb := tg.Dialect.Engine == dialects.TiDB
	short := testdb.Open(t, kind, func(dsn string) string { return dsn + "&innodb_lock_wait_timeout=1" })
	table := fmt.Sprintf("lease_plock_%d", time.Now().UnixNano()%1e12)
	q := drivers.For(tg.Dialect).QuoteIdent(table)
	log := &purgeLog{}
	s, err := sqlstore.New(tg.DB, sqlstore.Table(table), sqlstore.Retention(-1))
	noErr(t, err, "sqlstore.New")
	t.Cleanup(func() { _ = tg.Plain.Exec("DROP TABLE " + q).Error })
	// sw is a store whose statements give up a row lock wait after 1 s;
	// logged records its purge statements.
	sw, err := sqlstore.New(short.DB, sqlstore.Table(table), sqlstore.Retention(-1))
	noErr(t, err, "sqlstore.New")
	logged, err := sqlstore.New(short.DB.Session(&gorm.Session{Logger: log}), sqlstore.Table(table), sqlstore.Retention(-1), sqlstore.CreateTable(false))
	noErr(t, err, "sqlstore.New")
	// inlined sends its arguments inlined in the statement's text.
	inlinedDB := testdb.Open(t, kind, func(dsn string) string { return dsn + "&innodb_lock_wait_timeout=1&interpolateParams=true" })
	inlined, err := sqlstore.New(inlinedDB.DB, sqlstore.Table(table), sqlstore.Retention(-1), sqlstore.CreateTable(false))
	noErr(t, err, "sqlstore.New")

	name := func(i int) string { return fmt.Sprintf("p-%04d", i) }
	live := func(i int) bool { return i%liveEvery == liveEvery/2 }
	purgeable := func(i int) bool { return i%2 == 0 && !live(i) }
	// seed writes the rows that are not live leases; the live ones are
	// the store's own grants.
	seed := func() {
		t.Helper()
		noErr(t, tg.Plain.Exec("DELETE FROM "+q+" WHERE owner = 'o'").Error, "clearing")
		old, young := time.Now().Add(-time.Hour).UnixMilli()*1000, time.Now().UnixMilli()*1000
		var b strings.Builder
		for i := range names {
			if live(i) {
				continue
			}
			if b.Len() == 0 {
				b.WriteString("INSERT INTO " + q + " (lock_name, owner, expires_at, fence) VALUES ")
			} else {
				b.WriteString(", ")
			}
			fence := young
			if purgeable(i) {
				fence = old
			}
			fmt.Fprintf(&b, "('%s', 'o', -1, %d)", name(i), fence+int64(i))
			if i%500 == 499 || i == names-1 {
				noErr(t, tg.Plain.Exec(b.String()).Error, "seeding")
				b.Reset()
			}
		}
	}
	var lives []string
	for i := range names {
		if live(i) {
			_, ok, err := s.Acquire(ctx, name(i), "holder", time.Hour)
			noErr(t, err, "Acquire")
			want(t, ok, "%s not acquired", name(i))
			lives = append(lives, name(i))
		}
	}
	seed()
	wantPurged := int64(0)
	for i := range names {
		if purgeable(i) {
			wantPurged++
		}
	}

	// begin opens a transaction on its own connection, as the store's
	// purge runs (BEGIN PESSIMISTIC on TiDB), rolled back when the test
	// ends at the latest.
	begin := func(db *sql.DB) *sql.Conn {
		t.Helper()
		c, err := db.Conn(ctx)
		noErr(t, err, "a connection")
		b := "BEGIN"
		if tidb {
			b = "BEGIN PESSIMISTIC"
		}
		_, err = c.ExecContext(ctx, b)
		noErr(t, err, b)
		return c
	}
	end := func(c *sql.Conn) {
		_, _ = c.ExecContext(ctx, "ROLLBACK")
		_ = c.Close()
	}
	// probe refreshes live leases and acquires (then releases) a new name
	// between purgeable ones through sw, and says which of them waited
	// out the lock wait timeout.
	probes := 0
	probe := func(what string) (blocked []string) {
		t.Helper()
		// The single DELETE's scan reaches its 1000th row near p-2040.
		for _, n := range []string{lives[0], lives[10], lives[19]} {
			begun := time.Now()
			ok, err := sw.Refresh(ctx, n, "holder", time.Hour)
			if err != nil {
				want(t, isLockWait(err), "%s: Refresh(%s): %v", what, n, err)
				blocked = append(blocked, fmt.Sprintf("Refresh(%s) after %v", n, time.Since(begun).Round(10*time.Millisecond)))
				continue
			}
			want(t, ok, "%s: Refresh(%s) found no lease", what, n)
		}
		probes++
		n := fmt.Sprintf("%s-new%d", name(100), probes)
		_, ok, err := sw.Acquire(ctx, n, "newcomer", time.Minute)
		if err != nil {
			want(t, isLockWait(err), "%s: Acquire(%s): %v", what, n, err)
			blocked = append(blocked, "Acquire("+n+")")
		} else {
			want(t, ok, "%s: %s not acquired", what, n)
			_, err = sw.Release(ctx, n, "newcomer")
			noErr(t, err, "Release")
		}
		return blocked
	}

	// Baseline: the single DELETE ... LIMIT (TiDB's purge; MySQL's and
	// MariaDB's before), in an open transaction.
	single := strings.NewReplacer("{t}", q, "{now}", drivers.For(tg.Dialect).NowMillis(), "{age}", "?", "{limit}", fmt.Sprint(sqlstore.PurgeBatch)).
		Replace(`DELETE FROM {t} WHERE ` + sqldriver.LeasePurgeable + ` LIMIT {limit}`)
	age := sqlstore.PurgeMinAge.Milliseconds()
	c := begin(tg.SQL)
	res, err := c.ExecContext(ctx, single, age)
	noErr(t, err, "the single DELETE")
	n, _ := res.RowsAffected()
	blocked := probe("single DELETE open")
	end(c)
	t.Logf("%s: single DELETE ... LIMIT %d in an open transaction deleted %d rows; blocked: %v", tg.Name, sqlstore.PurgeBatch, n, blocked)
	want(t, n == int64(sqlstore.PurgeBatch), "the single DELETE deleted %d rows, want %d", n, sqlstore.PurgeBatch)
	if !tidb {
		want(t, len(blocked) == 4, "the single DELETE blocked %d of 4 probes on InnoDB: the check cannot fail", len(blocked))
	} else {
		want(t, len(blocked) == 0, "TiDB's single DELETE blocked %v", blocked)
	}

	// The other way round: a live lease's row locked, then the purge.
	holdLive := func() *sql.Conn {
		t.Helper()
		h := begin(tg.SQL)
		var one int
		noErr(t, h.QueryRowContext(ctx, "SELECT 1 FROM "+q+" WHERE lock_name = ? FOR UPDATE", lives[0]).Scan(&one), "locking a live row")
		return h
	}
	h := holdLive()
	sc := begin(short.SQL) // rolled back: TiDB's deletes what it finds
	begun := time.Now()
	_, singleErr := sc.ExecContext(ctx, single, age)
	singleTook := time.Since(begun)
	end(sc)
	end(h)
	t.Logf("%s: live row %s locked: single DELETE -> %v after %v", tg.Name, lives[0], singleErr, singleTook.Round(time.Millisecond))
	if !tidb {
		want(t, isLockWait(singleErr), "the single DELETE did not wait for the live row: %v", singleErr)
	}
	// The store's Purge(0), its names bound as parameters (prepared
	// statements), then inlined (interpolateParams=true, which MariaDB
	// may turn into a table scan for a long IN list).
	for _, c := range []struct {
		what  string
		store *sqlstore.Store
	}{{"bound", logged}, {"inlined", inlined}} {
		seed()
		h := holdLive()
		begun = time.Now()
		purged, purgeErr := c.store.Purge(ctx, 0)
		purgeTook := time.Since(begun)
		end(h)
		t.Logf("%s: live row %s locked: store's Purge(0), names %s -> %d rows, %v, in %v",
			tg.Name, lives[0], c.what, purged, purgeErr, purgeTook.Round(time.Millisecond))
		noErr(t, purgeErr, "Purge with a live row locked, names "+c.what)
		want(t, purged == wantPurged, "Purge deleted %d rows, want %d", purged, wantPurged)
		for _, n := range lives {
			ok, err := s.Refresh(ctx, n, "holder", time.Hour)
			noErr(t, err, "Refresh")
			want(t, ok, "the live lease %s was purged", n)
		}
	}

	// The store's statements of one batch, as it sent them, replayed in an
	// open transaction over the same rows.
	log.mu.Lock()
	sent := append([]string(nil), log.stmts...)
	log.mu.Unlock()
	// The first batch: a pick (none on TiDB) and its DELETEs.
	var batch []string
	for i, st := range sent {
		if i > 0 && strings.HasPrefix(st, "SELECT ") || tidb && len(batch) == 1 {
			break
		}
		batch = append(batch, st)
	}
	want(t, len(batch) > 0 && strings.HasPrefix(batch[len(batch)-1], "DELETE "), "no purge DELETE logged: %d statements", len(sent))
	seed()
	c = begin(tg.SQL)
	n = 0
	for _, st := range batch {
		if strings.HasPrefix(st, "SELECT ") {
			rows, err := c.QueryContext(ctx, st)
			noErr(t, err, "the pick")
			for rows.Next() {
			}
			noErr(t, rows.Err(), "the pick")
			_ = rows.Close()
			continue
		}
		res, err := c.ExecContext(ctx, st)
		noErr(t, err, "the store's DELETE")
		d, _ := res.RowsAffected()
		n += d
	}
	blocked = probe("the store's batch open")
	end(c)
	t.Logf("%s: the store's batch (%d statements) in an open transaction deleted %d rows; blocked: %v", tg.Name, len(batch), n, blocked)
	want(t, n == int64(sqlstore.PurgeBatch), "the store's batch deleted %d rows, want %d", n, sqlstore.PurgeBatch)
	want(t, len(blocked) == 0, "the store's purge blocked %v", blocked)
}

// isLockWait reports a lock wait timeout (1205, on MariaDB, MySQL and
// TiDB).
func isLockWait(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "1205") || strings.Contains(err.Error(), "Lock wait timeout"))
}
