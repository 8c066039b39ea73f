package lease_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore/pgnotify"
	"github.com/lockplugin/lockplugin/tests/internal/driverhook"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// listenEnv is the shared PostgreSQL on a pool of the test's own whose
// statements are counted at the driver (every query and exec of every
// connection, the LISTEN connection's included), and a lease table of
// the test's own: its LISTEN channels are derived from the table's name,
// so that no other run's notifications reach it, and its connections'
// application_name is the table's name, so that pg_stat_activity shows
// which backend is this test's listener. The table is dropped at the end.
type listenEnv struct {
	db    *gorm.DB
	sql   *sql.DB
	admin *sql.DB // the testdb pool, uncounted: pg_stat_activity, pg_terminate_backend
	n     *atomic.Int64
	table string
}

func newListenEnv(t *testing.T) *listenEnv {
	t.Helper()
	tg := testdb.Get(t, testdb.Postgres)
	cfg, err := pgx.ParseConfig(tg.DSN)
	noErr(t, err, "parsing the PostgreSQL DSN")
	e := &listenEnv{admin: tg.SQL, n: new(atomic.Int64), table: "lease_listen_" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	cfg.RuntimeParams["application_name"] = e.table
	e.sql = sql.OpenDB(driverhook.Wrap(stdlib.GetConnector(*cfg), driverhook.Hooks{
		AfterStatement: func(_ context.Context, _ string, err error) error {
			e.n.Add(1)
			return err
		},
	}))
	t.Cleanup(func() {
		_, _ = e.admin.Exec(`DROP TABLE IF EXISTS "` + e.table + `"`)
		_ = e.sql.Close()
	})
	e.db, err = gorm.Open(postgres.New(postgres.Config{Conn: e.sql}), &gorm.Config{Logger: logger.Discard})
	noErr(t, err)
	return e
}

// store returns a table store on the env's table, with Listen or not
// (retention off: its batches are statements of their own).
func (e *listenEnv) store(t *testing.T, listen bool) *sqlstore.Store {
	t.Helper()
	opts := []sqlstore.Option{sqlstore.Table(e.table), sqlstore.Retention(-1)}
	if listen {
		opts = append(opts, pgnotify.Listen())
	}
	s, err := sqlstore.New(e.db, opts...)
	noErr(t, err)
	return s
}

// listeners returns the backends of the env's pool that LISTEN (the last
// statement they ran is a LISTEN or UNLISTEN).
func (e *listenEnv) listeners(t *testing.T) []int64 {
	t.Helper()
	rows, err := e.admin.Query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND query ~ '^(UN)?LISTEN '`, e.table)
	noErr(t, err, "reading pg_stat_activity")
	defer rows.Close()
	var pids []int64
	for rows.Next() {
		var pid int64
		noErr(t, rows.Scan(&pid))
		pids = append(pids, pid)
	}
	return pids
}

// TestI25TableListenWakes: with Listen, a waiting Acquire (PollInterval
// 10 s, wait 3 s) gets a name released after 200 ms, within a few ms of
// the release, and one whose holder expires (TTL 500 ms) gets it at the
// expiry. The baseline, the same table without Listen, polls: its wait
// runs out before its next poll. 5 rounds each.
func TestI25TableListenWakes(t *testing.T) {
	e := newListenEnv(t)
	listen, plain := e.store(t, true), e.store(t, false)
	ctx := context.Background()
	round := func(st lease.Store, release bool, i int) (time.Duration, error) {
		name := namePrefix + "i25_listen_" + strconv.FormatBool(release) + strconv.Itoa(i) + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
		ttl := 30 * time.Second
		if !release {
			ttl = 500 * time.Millisecond
		}
		h, err := lease.NewManager(st).Acquire(ctx, name, lease.TTL(ttl))
		if err != nil {
			return 0, err
		}
		defer func() { _ = h.Release(ctx) }()
		var freed atomic.Int64 // when the release returned (UnixNano)
		if release {
			time.AfterFunc(200*time.Millisecond, func() {
				if h.Release(ctx) == nil {
					freed.Store(time.Now().UnixNano())
				}
			})
		} else {
			freed.Store(time.Now().Add(ttl).UnixNano()) // about: the expiry by the database's clock
		}
		l, err := lease.NewManager(st, lease.PollInterval(10*time.Second)).Acquire(ctx, name, lease.TTL(5*time.Second), lease.WaitAtMost(3*time.Second))
		if err != nil {
			return 0, err
		}
		got := time.Now()
		_ = l.Release(ctx)
		return got.Sub(time.Unix(0, freed.Load())), nil
	}
	for _, release := range []bool{true, false} {
		got, baseline := 0, 0
		var lat []time.Duration
		for i := range 5 {
			if d, err := round(listen, release, i); err == nil {
				got++
				lat = append(lat, d)
			} else {
				t.Logf("Listen round %d: %v", i, err)
			}
			if _, err := round(plain, release, i); err == nil {
				baseline++
			} else if !errors.Is(err, lease.ErrNotAcquired) {
				t.Errorf("baseline round %d: %v", i, err)
			}
		}
		how := "expiry"
		if release {
			how = "release"
		}
		slices.Sort(lat)
		t.Logf("holder's %s: with Listen %d of 5 waiters got the name (after the %s: %v), polling every 10 s %d of 5", how, got, how, lat, baseline)
		want(t, got == 5, "holder's %s: %d of 5 waiters got the name with Listen, want 5", how, got)
		want(t, baseline == 0, "baseline (polling every 10 s, 3 s wait): %d of 5 got the name; the check cannot tell", baseline)
		if release && len(lat) > 0 {
			want(t, lat[len(lat)/2] < 50*time.Millisecond, "median wake-up %v after the release, want a few ms", lat[len(lat)/2])
		}
	}
}

// TestI25TableListenStatements: 8 waiters wait 5 s (WaitAtMost) on a held
// name with the default PollInterval (50 ms). Without Listen each polls
// (about 100 statements each); with Listen each sends its refused
// Acquire and one read of the remaining TTL, and waits on the store's one
// LISTEN connection. Every statement of the pool is counted.
func TestI25TableListenStatements(t *testing.T) {
	e := newListenEnv(t)
	ctx := context.Background()
	const waiters, wait = 8, 5 * time.Second
	run := func(st lease.Store) (stmts int64, notAcquired int) {
		name := namePrefix + "i25_listen_stmts_" + strconv.FormatInt(time.Now().UnixNano(), 36)
		h, err := lease.NewManager(st).Acquire(ctx, name, lease.TTL(time.Minute))
		noErr(t, err)
		defer func() { _ = h.Release(ctx) }()
		// The previous phase's last calls, which the Manager stopped
		// waiting for at the end of each wait, finish first, and so do
		// the releases that follow an abandoned acquire (6, the last
		// about 1.3 s after it).
		time.Sleep(2 * time.Second)
		before := e.n.Load()
		var wg sync.WaitGroup
		var missed atomic.Int64
		for range waiters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := lease.NewManager(st).Acquire(ctx, name, lease.TTL(time.Minute), lease.WaitAtMost(wait))
				if errors.Is(err, lease.ErrNotAcquired) {
					missed.Add(1)
				} else {
					t.Errorf("waiter: %v, want ErrNotAcquired", err)
				}
			}()
		}
		wg.Wait()
		return e.n.Load() - before, int(missed.Load())
	}
	poll, pm := run(e.store(t, false))
	listen, lm := run(e.store(t, true))
	t.Logf("%d waiters x %v on a held name: polling %d statements (%.1f per waiter per s), Listen %d statements (LISTEN included); waits that ran out: %d and %d",
		waiters, wait, poll, float64(poll)/waiters/wait.Seconds(), listen, pm, lm)
	want(t, pm == waiters && lm == waiters, "waits that ran out: %d polling, %d Listen; want %d each", pm, lm, waiters)
	want(t, listen <= 3*waiters+1, "Listen: %d statements for %d waiters, want at most %d", listen, waiters, 3*waiters+1)
	want(t, poll >= 10*listen, "polling %d statements against Listen %d: the baseline does not show the difference", poll, listen)
}

// TestI25TableListenContended: 8 workers take one name 10 times each
// (WaitAtMost 10 s, holding 2 ms, then 50 ms), through a Manager each,
// with and without Listen: the holders harness counts overlaps and fence
// regressions (0 both; TestContendCatchesOverlap shows it failing on a
// store that grants everyone), and statements per acquisition are
// compared.
func TestI25TableListenContended(t *testing.T) {
	e := newListenEnv(t)
	const workers, per = 8, 10
	for _, c := range []struct {
		withListen bool
		hold       time.Duration
	}{{false, 2 * time.Millisecond}, {true, 2 * time.Millisecond}, {false, 50 * time.Millisecond}, {true, 50 * time.Millisecond}} {
		withListen, hold := c.withListen, c.hold
		st := e.store(t, withListen)
		name := namePrefix + "i25_listen_contend_" + strconv.FormatInt(time.Now().UnixNano(), 36)
		ms := make([]*lease.Manager, workers)
		for i := range ms {
			ms[i] = lease.NewManager(st)
		}
		before := e.n.Load()
		start := time.Now()
		h, notAcquired := contend(workers, per, hold, func(w int) (int64, func(), error) {
			l, err := ms[w].Acquire(context.Background(), name, lease.TTL(5*time.Second), lease.WaitAtMost(10*time.Second))
			if err != nil {
				return 0, nil, err
			}
			return l.Fence(), func() { _ = l.Release(context.Background()) }, nil
		})
		took := time.Since(start)
		stmts := e.n.Load() - before
		t.Logf("Listen %v, holding %v: %v in %v; %.1f statements per acquisition; %d waits ran out",
			withListen, hold, h, took.Round(time.Millisecond), float64(stmts)/float64(max(h.runs, 1)), notAcquired)
		want(t, h.overlaps == 0 && h.regressed == 0, "Listen %v: %v", withListen, h)
		want(t, h.runs == workers*per && notAcquired == 0, "Listen %v: %d of %d acquisitions, %d waits ran out", withListen, h.runs, workers*per, notAcquired)
	}
}

// TestI25TableListenLost: the store's LISTEN connection is killed
// (pg_terminate_backend of this test's own listener backend, found by its
// unique channel), once, and then again and again every 20 ms. Waiters
// (PollInterval 50 ms) fall back to polling while it is gone, the store
// LISTENs again once it can, and every waiter gets the name after the
// holder releases it, with no overlap.
func TestI25TableListenLost(t *testing.T) {
	e := newListenEnv(t)
	st := e.store(t, true)
	ctx := context.Background()
	for _, repeat := range []bool{false, true} {
		t.Run(fmt.Sprintf("repeat=%v", repeat), func(t *testing.T) {
			name := namePrefix + "i25_listen_lost_" + strconv.FormatInt(time.Now().UnixNano(), 36)
			hl, err := lease.NewManager(st).Acquire(ctx, name, lease.TTL(time.Minute))
			noErr(t, err)
			const waiters = 4
			h, notAcquired := &holders{}, atomic.Int64{}
			var wg sync.WaitGroup
			for range waiters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l, err := lease.NewManager(st).Acquire(ctx, name, lease.TTL(10*time.Second), lease.WaitAtMost(15*time.Second))
					if err != nil {
						notAcquired.Add(1)
						t.Errorf("waiter: %v", err)
						return
					}
					h.enter(l.Fence())
					time.Sleep(20 * time.Millisecond)
					h.leave()
					_ = l.Release(ctx)
				}()
			}
			time.Sleep(300 * time.Millisecond) // the waiters wait on the LISTEN connection
			first := e.listeners(t)
			want(t, len(first) == 1, "%d LISTEN backends of this test before the kill, want 1: %v", len(first), first)
			kill := func() int {
				n := 0
				for _, pid := range e.listeners(t) {
					var ok bool
					noErr(t, e.admin.QueryRow(`SELECT pg_terminate_backend($1)`, pid).Scan(&ok))
					if ok {
						n++
					}
				}
				return n
			}
			kills := kill()
			stop := make(chan struct{})
			killed := make(chan int, 1)
			go func() {
				n := 0
				for repeat {
					select {
					case <-stop:
						killed <- n
						return
					case <-time.After(20 * time.Millisecond):
						n += kill()
					}
				}
				killed <- n
			}()
			time.Sleep(500 * time.Millisecond)
			before := e.n.Load()
			released := time.Now()
			noErr(t, hl.Release(ctx))
			wg.Wait()
			took := time.Since(released)
			close(stop)
			kills += <-killed
			again := e.listeners(t)
			t.Logf("repeat %v: %d LISTEN backends killed; %v, %d waits ran out; all %d waiters done %v after the release, %d statements meanwhile; listening again: %v (before: %v)",
				repeat, kills, h, notAcquired.Load(), waiters, took.Round(time.Millisecond), e.n.Load()-before, again, first)
			want(t, h.overlaps == 0 && h.regressed == 0 && h.runs == waiters, "%v", h)
			if !repeat {
				time.Sleep(200 * time.Millisecond)
				if again = e.listeners(t); len(again) != 1 || again[0] == first[0] {
					t.Logf("no new listener yet (it starts with the next wait): %v", again)
				}
			}
		})
	}
}

// BenchmarkI25TableReleaseNotify: what the release's pg_notify costs.
// 8 goroutines each acquire and release a name of their own on the
// table store, without Listen (plain release) and with it (the release
// also notifies; PostgreSQL serialises notifying commits on one lock),
// alternating in one process with -count.
func BenchmarkI25TableReleaseNotify(b *testing.B) {
	tg := testdb.Get(b, testdb.Postgres)
	stores := map[bool]*sqlstore.Store{}
	for _, listen := range []bool{false, true} {
		opts := []sqlstore.Option{sqlstore.Table(table), sqlstore.Retention(-1)}
		if listen {
			opts = append(opts, pgnotify.Listen())
		}
		s, err := sqlstore.New(tg.DB, opts...)
		if err != nil {
			b.Fatal(err)
		}
		stores[listen] = s
	}
	// Rounds of their own (BENCH_ROUNDS, default 4), so that the two
	// alternate whatever -count says.
	rounds, _ := strconv.Atoi(os.Getenv("BENCH_ROUNDS"))
	for round := range max(rounds, 1) {
		for _, listen := range []bool{false, true} {
			s := stores[listen]
			b.Run(fmt.Sprintf("round=%d/listen=%v", round, listen), func(b *testing.B) {
				var next atomic.Int64
				base := namePrefix + "i25_notify_bench_" + strconv.FormatInt(time.Now().UnixNano(), 36) + "_"
				b.SetParallelism(4)
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					name := base + strconv.FormatInt(next.Add(1), 10)
					for pb.Next() {
						if _, ok, err := s.Acquire(ctx, name, "bench-owner", time.Minute); err != nil || !ok {
							b.Errorf("acquire: %v %v", ok, err)
							return
						}
						if ok, err := s.Release(ctx, name, "bench-owner"); err != nil || !ok {
							b.Errorf("release: %v %v", ok, err)
							return
						}
					}
				})
			})
		}
	}
}

// TestI25TableListenElsewhere: Listen is PostgreSQL's; New refuses it on
// SQLite and MySQL/MariaDB with ErrUnsupported, and there, without it, the
// table store's WaitFree and watches answer errors.ErrUnsupported at
// once and send nothing (Manager polls, Campaign checks on its timer).
func TestI25TableListenElsewhere(t *testing.T) {
	for _, kind := range []string{testdb.SQLite, testdb.MySQL} {
		t.Run(kind, func(t *testing.T) {
			tg := testdb.Get(t, kind)
			_, err := sqlstore.New(tg.DB, sqlstore.Table(table), pgnotify.Listen())
			want(t, errors.Is(err, dialects.ErrUnsupported), "New with Listen on %s: %v, want ErrUnsupported", kind, err)
			s := tableStore(t, tg.DB)
			start := time.Now()
			err = s.WaitFree(context.Background(), namePrefix+"i25_elsewhere")
			want(t, errors.Is(err, errors.ErrUnsupported), "WaitFree without Listen: %v, want ErrUnsupported", err)
			_, err = s.WatchRelease(context.Background(), namePrefix+"i25_elsewhere")
			want(t, errors.Is(err, errors.ErrUnsupported), "WatchRelease without Listen: %v, want ErrUnsupported", err)
			want(t, time.Since(start) < 100*time.Millisecond, "the refusals took %v", time.Since(start))
		})
	}
}

// TestI25TableListenHandoff: in one process, a release wakes the WaitFree
// that began first, not the others. When that waiter takes the name, the
// second keeps waiting (the handoff check finds the name held) until the
// first releases; when the first gives up without taking it, the handoff
// check wakes the second about 200 ms after the release.
func TestI25TableListenHandoff(t *testing.T) {
	e := newListenEnv(t)
	s := e.store(t, true)
	ctx := context.Background()
	name := namePrefix + "i25_listen_handoff_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	wait := func() <-chan time.Time {
		ch := make(chan time.Time, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := s.WaitFree(wctx, name); err != nil {
				t.Errorf("WaitFree: %v", err)
			}
			ch <- time.Now()
		}()
		return ch
	}
	take := func(owner string) {
		_, ok, err := s.Acquire(ctx, name, owner, time.Minute)
		noErr(t, err)
		want(t, ok, "%s did not get the name", owner)
	}
	free := func(owner string) time.Time {
		ok, err := s.Release(ctx, name, owner)
		noErr(t, err)
		want(t, ok, "%s did not hold the name", owner)
		return time.Now()
	}
	for _, firstTakes := range []bool{true, false} {
		take("holder")
		a := wait()
		time.Sleep(100 * time.Millisecond)
		b := wait()
		time.Sleep(200 * time.Millisecond)
		released := free("holder")
		ta := <-a
		t.Logf("first takes it %v: the first waiter woke %v after the release", firstTakes, ta.Sub(released).Round(time.Microsecond))
		if firstTakes {
			take("first")
			select {
			case tb := <-b:
				t.Fatalf("the second waiter woke %v after the release while the first holds the name", tb.Sub(released))
			case <-time.After(600 * time.Millisecond):
			}
			released = free("first")
		}
		tb := <-b
		t.Logf("first takes it %v: the second waiter woke %v after the (last) release", firstTakes, tb.Sub(released).Round(time.Microsecond))
		want(t, ta.Sub(released) < 100*time.Millisecond || firstTakes, "the first waiter woke %v after the release", ta.Sub(released))
		if !firstTakes {
			want(t, tb.Sub(released) >= 150*time.Millisecond && tb.Sub(released) < time.Second, "the second waiter woke %v after the release, want by the handoff check (~200 ms)", tb.Sub(released))
		}
	}
}
