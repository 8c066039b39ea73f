package lease_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// retentionTable makes a table store on a table of the test's own (dropped
// when the test ends), so that purging it touches no other test's rows. It
// returns the store, the quoted table and a row counter.
func retentionTable(t *testing.T, tg *testdb.Target, opts ...sqlstore.Option) (*sqlstore.Store, string, func(where string) int64) {
	t.Helper()
	if !tg.Dialect.Supports(dialects.LeaseTable) {
		tableStore(t, tg.DB) // checks the refusal, and skips
	}
	name := fmt.Sprintf("lease_ret_%d", time.Now().UnixNano()%1e12)
	s, err := sqlstore.New(tg.DB, append([]sqlstore.Option{sqlstore.Table(name)}, opts...)...)
	noErr(t, err, "sqlstore.New")
	q := drivers.For(tg.Dialect).QuoteIdent(name)
	t.Cleanup(func() { _ = tg.Plain.Exec("DROP TABLE " + q).Error })
	count := func(where string) int64 {
		t.Helper()
		var n int64
		if where != "" {
			where = " WHERE " + where
		}
		noErr(t, tg.Plain.Raw("SELECT COUNT(*) FROM "+q+where).Row().Scan(&n), "counting rows")
		return n
	}
	return s, q, count
}

// oldFence is a fence the store handed out age ago: the clock in ms times
// 1000, plus a few grants in that millisecond.
func oldFence(age time.Duration) int64 { return time.Now().Add(-age).UnixMilli()*1000 + 17 }

// TestTableRetentionFences: a name whose row was granted two minutes ago
// and released, purged (Purge(0)) and taken again gets a fence above the
// one it had, on every database; likewise for a lease that expired
// unreleased and for a row left by the counter fences of old versions
// (fence 7). A row granted within PurgeMinAge, and a live lease, are never
// purged; Purge(olderThan) keeps a row granted within olderThan. The
// baseline, counter fences (a new row starts at 1) with a naive DELETE of
// released rows, hands out 1 again after 3.
func TestTableRetentionFences(t *testing.T) {
	ctx := context.Background()
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		s, q, count := retentionTable(t, tg, sqlstore.Retention(-1))

		// Baseline: the old grant rule (fence + 1, a new row at 1) by plain
		// SQL on the same table, and a naive cleanup of released rows.
		base := "baseline-counter"
		grant := func() int64 {
			res := tg.Plain.Exec("UPDATE "+q+" SET fence = fence + 1, expires_at = 0 WHERE lock_name = ?", base)
			noErr(t, res.Error)
			if res.RowsAffected == 0 {
				noErr(t, tg.Plain.Exec("INSERT INTO "+q+" (lock_name, owner, expires_at, fence) VALUES (?, 'o', 0, 1)", base).Error)
			}
			var f int64
			noErr(t, tg.Plain.Raw("SELECT fence FROM "+q+" WHERE lock_name = ?", base).Row().Scan(&f))
			noErr(t, tg.Plain.Exec("UPDATE "+q+" SET expires_at = -1 WHERE lock_name = ?", base).Error)
			return f
		}
		var last int64
		for range 3 {
			last = grant()
		}
		noErr(t, tg.Plain.Exec("DELETE FROM "+q+" WHERE expires_at = -1").Error)
		again := grant()
		t.Logf("baseline (counter fences, released rows deleted): fence %d after %d", again, last)
		want(t, again <= last, "the baseline did not go back: the check cannot fail")
		noErr(t, tg.Plain.Exec("DELETE FROM "+q).Error)

		regressions := 0
		check := func(what string, before, after int64) {
			t.Helper()
			if after <= before {
				regressions++
				t.Errorf("%s: fence %d after %d", what, after, before)
			}
		}
		seed := func(name string, exp, fence int64) {
			t.Helper()
			noErr(t, tg.Plain.Exec("INSERT INTO "+q+" (lock_name, owner, expires_at, fence) VALUES (?, 'o', ?, ?)", name, exp, fence).Error)
		}
		purge := func(age time.Duration, wantN int64, what string) {
			t.Helper()
			n, err := s.Purge(ctx, age)
			noErr(t, err)
			want(t, n == wantN, "Purge(%v) deleted %d rows, want %d (%s)", age, n, wantN, what)
		}

		// Taken and released just now: Purge(0) keeps it (PurgeMinAge).
		f0, ok, err := s.Acquire(ctx, "young", "a", time.Minute)
		noErr(t, err)
		want(t, ok, "not acquired")
		_, err = s.Release(ctx, "young", "a")
		noErr(t, err)
		purge(0, 0, "a row granted within PurgeMinAge")
		f1, _, err := s.Acquire(ctx, "young", "b", time.Minute)
		noErr(t, err)
		check("young row taken again", f0, f1)
		_, err = s.Release(ctx, "young", "b")
		noErr(t, err)

		// Granted two minutes ago and released: purged, taken again.
		seed("released", -1, oldFence(2*time.Minute))
		purge(time.Hour, 0, "granted within the hour")
		purge(0, 1, "the released row")
		f2, ok, err := s.Acquire(ctx, "released", "b", time.Minute)
		noErr(t, err)
		want(t, ok, "not acquired after the purge")
		check("released and purged", oldFence(2*time.Minute), f2)

		// Expired unreleased two minutes ago: purged; the live lease
		// ("released", held by b) is not.
		seed("expired", time.Now().Add(-2*time.Minute).UnixMilli(), oldFence(3*time.Minute))
		purge(0, 1, "the expired row")
		ok, err = s.Refresh(ctx, "released", "b", time.Minute)
		noErr(t, err)
		want(t, ok, "the live lease was purged: its holder's Refresh failed")
		f4, ok, err := s.Acquire(ctx, "expired", "b", time.Minute)
		noErr(t, err)
		want(t, ok, "not acquired after the purge")
		check("expired and purged", oldFence(3*time.Minute), f4)
		// A live lease granted long ago (no expiry) is not purged either.
		seed("held-long", 0, oldFence(time.Hour))
		purge(0, 0, "a lease without expiry")

		// A row of the old counter fences: its next grant jumps to the
		// clock; released, it is purgeable at once.
		seed("legacy", -1, 7)
		f5, ok, err := s.Acquire(ctx, "legacy", "a", time.Minute)
		noErr(t, err)
		want(t, ok, "legacy row not acquired")
		check("legacy row taken", 7, f5)
		_, err = s.Release(ctx, "legacy", "a")
		noErr(t, err)
		seed("legacy2", -1, 7)
		purge(time.Hour, 1, "the legacy row (fence 7) only")
		f6, _, err := s.Acquire(ctx, "legacy2", "a", time.Minute)
		noErr(t, err)
		check("legacy row purged", 7, f6)

		// The same owner's retried acquire keeps its fence.
		f7, ok, err := s.Acquire(ctx, "legacy2", "a", time.Minute)
		noErr(t, err)
		want(t, ok && f7 == f6, "retried acquire: %v %d, want the same fence %d", ok, f7, f6)
		want(t, count("") == 6, "%d rows, want 6", count(""))
		t.Logf("%s: fences %d -> %d (young, kept), 2-minute-old released row purged -> %d, expired purged -> %d, 7 -> %d (legacy row), 7 -> %d (legacy row purged): %d regressions",
			tg.Dialect, f0, f1, f2, f4, f5, f6, regressions)
	})
}

// TestTableRetentionUnderLoad: rows granted two minutes ago and released
// are purged while acquires race for them. 4 groups of 3 workers (12),
// each group on its own names, 40 rounds: a name's old row is seeded, then
// its 3 workers Acquire it and one Purge(0) runs, all at once behind a
// barrier; the winner Refreshes and Releases (both must find the row: no
// live lease removed), then each worker takes and releases it once more.
// Every grant must be above the seeded fence and above the name's grant
// before it (per name), and at most one worker may hold it at a time.
func TestTableRetentionUnderLoad(t *testing.T) {
	const groups, workers, rounds = 4, 3, 40
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		s, q, _ := retentionTable(t, tg, sqlstore.Retention(-1))
		ctx := context.Background()
		var grants, doubles, regressions, lost, deleted, raced atomic.Int64
		var wg sync.WaitGroup
		for g := range groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					name := fmt.Sprintf("race-%d-%d", g, r)
					seeded := oldFence(2 * time.Minute)
					if err := tg.Plain.Exec("INSERT INTO "+q+" (lock_name, owner, expires_at, fence) VALUES (?, 'o', -1, ?)", name, seeded).Error; err != nil {
						t.Errorf("seeding: %v", err)
						return
					}
					var mu sync.Mutex
					holders, last := 0, seeded
					grant := func(fence int64) {
						mu.Lock()
						defer mu.Unlock()
						grants.Add(1)
						holders++
						if holders > 1 {
							doubles.Add(1)
						}
						if fence <= last {
							regressions.Add(1)
						}
						last = max(last, fence)
					}
					done := func() { mu.Lock(); holders--; mu.Unlock() }
					start := make(chan struct{})
					var rw sync.WaitGroup
					rw.Add(1)
					go func() {
						defer rw.Done()
						<-start
						n, err := s.Purge(ctx, 0)
						if err != nil {
							t.Errorf("Purge: %v", err)
						}
						deleted.Add(n)
					}()
					for w := range workers {
						rw.Add(1)
						go func() {
							defer rw.Done()
							owner := fmt.Sprint("w", w)
							<-start
							fence, ok, err := s.Acquire(ctx, name, owner, 5*time.Second)
							if err != nil {
								t.Errorf("Acquire: %v", err)
								return
							}
							if !ok {
								return // another worker won the race
							}
							grant(fence)
							time.Sleep(300 * time.Microsecond)
							if ok, err := s.Refresh(ctx, name, owner, 5*time.Second); err != nil || !ok {
								lost.Add(1)
								t.Errorf("the holder's Refresh = %v, %v: its row was purged", ok, err)
							}
							done()
							if ok, err := s.Release(ctx, name, owner); err != nil || !ok {
								lost.Add(1)
								t.Errorf("the holder's Release = %v, %v: its row was purged", ok, err)
							}
						}()
					}
					close(start)
					rw.Wait()
					// Then each worker takes it once more, in turn.
					for w := range workers {
						owner := fmt.Sprint("w", w)
						fence, ok, err := s.Acquire(ctx, name, owner, 5*time.Second)
						if err != nil || !ok {
							t.Errorf("Acquire of a free name = %v, %v", ok, err)
							continue
						}
						grant(fence)
						done()
						if ok, err := s.Release(ctx, name, owner); err != nil || !ok {
							lost.Add(1)
							t.Errorf("Release = %v, %v", ok, err)
						}
					}
					raced.Add(1)
				}
			}()
		}
		wg.Wait()
		t.Logf("%s: %d rounds, %d grants, purges deleted %d rows: %d double grants, %d fence regressions, %d live leases lost",
			tg.Dialect, raced.Load(), grants.Load(), deleted.Load(), doubles.Load(), regressions.Load(), lost.Load())
		want(t, doubles.Load() == 0 && regressions.Load() == 0 && lost.Load() == 0, "%d double grants, %d regressions, %d lost", doubles.Load(), regressions.Load(), lost.Load())
		want(t, deleted.Load() > 0, "no purge won a race: the test exercised nothing")
	})
}

// TestTableRetentionBounded: 100k names in the store's own row format
// (seeded by SQL: released ones last granted an hour ago, every 1000th
// still held without expiry, every 10th with an old counter fence), then
// Purge(0): what remains is the held ones. Then the automatic retention:
// 2000 more released rows, a store with Retention(1 ms), one Acquire: its
// background batch removes PurgeBatch of them. Before the purge, acquires
// on the seeded table: a held name is refused, a released one granted
// above its old fence.
func TestTableRetentionBounded(t *testing.T) {
	const names, liveEvery = 100_000, 1000
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		s, q, count := retentionTable(t, tg, sqlstore.Retention(-1))
		ctx := context.Background()
		old := (time.Now().Add(-time.Hour).UnixMilli()) * 1000
		seed := func(prefix string, from, to int, live bool) {
			t.Helper()
			var b strings.Builder
			flush := func() {
				if b.Len() > 0 {
					noErr(t, tg.Plain.Exec(b.String()).Error, "seeding")
					b.Reset()
				}
			}
			for i := from; i < to; i++ {
				if b.Len() == 0 {
					b.WriteString("INSERT INTO " + q + " (lock_name, owner, expires_at, fence) VALUES ")
				} else {
					b.WriteString(", ")
				}
				exp, fence := int64(-1), old+int64(i)
				if live && i%liveEvery == 0 {
					exp = 0
				}
				if i%10 == 5 {
					fence = int64(i%100 + 1) // the counter fences of old versions
				}
				fmt.Fprintf(&b, "('%s%d', 'o', %d, %d)", prefix, i, exp, fence)
				if (i-from+1)%1000 == 0 {
					flush()
				}
			}
			flush()
		}
		begin := time.Now()
		seed("order-", 0, names, true)
		seeded := time.Since(begin)
		live := int64(names / liveEvery)
		// The acquire on the lived-in table: a stranger is refused a name
		// held since before (on SQLite by the read first, which sends no
		// write), and granted a released one above its old fence.
		const refusals = 100
		begin = time.Now()
		for range refusals {
			_, ok, err := s.Acquire(ctx, "order-0", "stranger", time.Minute)
			noErr(t, err)
			want(t, !ok, "a stranger got order-0, held since before")
		}
		refused := time.Since(begin) / refusals
		f, ok, err := s.Acquire(ctx, "order-1", "stranger", time.Minute)
		noErr(t, err)
		want(t, ok && f > old+1, "order-1, released: granted %v with fence %d, want above its old %d", ok, f, old+1)
		_, err = s.Release(ctx, "order-1", "stranger")
		noErr(t, err)
		t.Logf("%s: with %d rows, a refused acquire took %v", tg.Dialect, names, refused.Round(time.Microsecond))
		before := count("")
		begin = time.Now()
		n, err := s.Purge(ctx, 0)
		took := time.Since(begin)
		noErr(t, err)
		after := count("")
		held := count("expires_at = 0")
		t.Logf("%s: %d rows seeded in %v (%d held); Purge(0) deleted %d in %v; %d rows left, %d held",
			tg.Dialect, before, seeded.Round(time.Millisecond), live, n, took.Round(time.Millisecond), after, held)
		want(t, before == names, "%d rows seeded, want %d", before, names)
		want(t, held == live, "%d held rows left of %d: a live lease was purged", held, live)
		want(t, after <= live+10, "%d rows left for %d live leases", after, live)

		// The automatic retention: one batch in the background after an
		// Acquire, on a store with Retention(1 ms).
		seed("auto-", 0, 2000, false)
		auto, err := sqlstore.New(tg.DB, sqlstore.Table(strings.Trim(q, "\"`[]")), sqlstore.Retention(time.Millisecond))
		noErr(t, err)
		_, ok, err = auto.Acquire(ctx, "auto-trigger", "o", time.Minute)
		noErr(t, err)
		want(t, ok, "not acquired")
		deadline := time.Now().Add(30 * time.Second)
		for count("lock_name LIKE 'auto-%'") > 2001-sqlstore.PurgeBatch && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		left := count("lock_name LIKE 'auto-%'")
		t.Logf("%s: automatic retention: 2000 released rows, one batch after an Acquire: %d left (with the new lease)", tg.Dialect, left)
		want(t, left == 2001-sqlstore.PurgeBatch, "%d auto- rows left, want %d: one batch", left, 2001-sqlstore.PurgeBatch)
	})
}
