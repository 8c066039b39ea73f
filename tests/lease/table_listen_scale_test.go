package lease_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore/pgnotify"
	"github.com/lockplugin/lockplugin/tests/internal/driverhook"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// scaleProc is one modelled process of TestI25TableListenScale: a pool of
// its own (its own backends, application_name of its own), a store with
// Listen on the shared table, its statements and the notifications its
// LISTEN connection received, and its WaitFree calls that returned nil (a
// waiting Acquire told to try).
type scaleProc struct {
	sql      *sql.DB
	store    *sqlstore.Store
	app      string
	stmts    atomic.Int64
	received atomic.Int64
	woke     atomic.Int64
	hot      atomic.Int64 // acquisitions of hot names
	cold     atomic.Int64 // acquisitions of cold names
}

// countingWaiter is the store with its WaitFree counted: Manager finds
// WaitFree on it (lease.Waiter) as on the store.
type countingWaiter struct {
	*sqlstore.Store
	woke *atomic.Int64
}

func (c countingWaiter) WaitFree(ctx context.Context, name string) error {
	err := c.Store.WaitFree(ctx, name)
	if err == nil {
		c.woke.Add(1)
	}
	return err
}

// backendCPU sums utime+stime (clock ticks) of the server backends of
// application_name app, read from /proc: the shared PostgreSQL runs on
// this machine. ok is false when /proc cannot be read.
func backendCPU(t *testing.T, admin *sql.DB, app string, listenerOnly bool) (ticks int64, ok bool) {
	t.Helper()
	q := `SELECT pid FROM pg_stat_activity WHERE application_name = $1`
	if listenerOnly {
		q += ` AND query ~ '^(UN)?LISTEN'`
	}
	rows, err := admin.Query(q, app)
	noErr(t, err, "reading pg_stat_activity")
	defer rows.Close()
	ok = true
	for rows.Next() {
		var pid int
		noErr(t, rows.Scan(&pid))
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			ok = false
			continue
		}
		// Fields after the command's closing parenthesis: state is the
		// 3rd field of the line, utime the 14th, stime the 15th.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			ok = false
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return ticks, ok
}

// processCPU is this process's user+system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestI25TableListenScale measures Listen on the lived-in shape: P
// processes (each a pool and a Store of its own, with Listen, in this test
// process) share one table of N names. In each process, C cold workers
// acquire and release names of their own (nobody waits for them; one
// cycle every 10 ms each), and one worker per hot name (H of them) takes
// it in turn with the other processes' (WaitAtMost 10 s, holding 5 ms):
// P waiters per hot name. It logs, per process, the notifications its
// LISTEN connection received per second against its WaitFree calls that
// returned nil, its statements per acquisition; the server's LISTEN
// backends and pg_notification_queue_usage(); the CPU of this test process
// and of the LISTEN backends per notification received. It asserts only
// what is deterministic: no overlap and no fence regression on any hot
// name, no wait ran out, every hot worker got its name.
// I25_LISTEN_SCALE_SECONDS sets the run's length (default 4).
func TestI25TableListenScale(t *testing.T) {
	const procs, names, cold, hot = 8, 200, 2, 4
	run := 4 * time.Second
	if s, err := strconv.Atoi(os.Getenv("I25_LISTEN_SCALE_SECONDS")); err == nil && s > 0 {
		run = time.Duration(s) * time.Second
	}
	tg := testdb.Get(t, testdb.Postgres)
	cfg, err := pgx.ParseConfig(tg.DSN)
	noErr(t, err, "parsing the PostgreSQL DSN")
	uniq := strconv.FormatInt(time.Now().UnixNano(), 36)
	tbl := "lease_listen_scale_" + uniq
	t.Cleanup(func() { _, _ = tg.SQL.Exec(`DROP TABLE IF EXISTS "` + tbl + `"`) })

	ps := make([]*scaleProc, procs)
	for i := range ps {
		p := &scaleProc{app: fmt.Sprintf("i25scale_%s_%d", uniq, i)}
		c := cfg.Copy()
		c.RuntimeParams["application_name"] = p.app
		p.sql = sql.OpenDB(driverhook.Wrap(stdlib.GetConnector(*c), driverhook.Hooks{
			AfterStatement: func(_ context.Context, _ string, err error) error {
				p.stmts.Add(1)
				return err
			},
		}))
		p.sql.SetMaxOpenConns(cold + hot + 2)
		p.sql.SetMaxIdleConns(cold + hot + 2)
		t.Cleanup(func() { _ = p.sql.Close() })
		db, err := gorm.Open(postgres.New(postgres.Config{Conn: p.sql}), &gorm.Config{Logger: logger.Discard})
		noErr(t, err)
		receive := func(ctx context.Context, dc any) (string, string, error) {
			ch, payload, err := pgnotify.Receive(ctx, dc)
			if err == nil {
				p.received.Add(1)
			}
			return ch, payload, err
		}
		p.store, err = sqlstore.New(db, sqlstore.Table(tbl), sqlstore.Retention(-1), sqlstore.Listen(receive))
		noErr(t, err)
		ps[i] = p
	}
	name := func(i int) string { return fmt.Sprintf("%si25_scale_%s_%03d", namePrefix, uniq, i) }

	// Warm up: every process waits once (its LISTEN connection opens).
	for _, p := range ps {
		l, err := lease.NewManager(countingWaiter{p.store, &p.woke}).Acquire(context.Background(), name(0), lease.TTL(time.Second), lease.WaitAtMost(5*time.Second))
		noErr(t, err, "warming up")
		noErr(t, l.Release(context.Background()))
	}
	time.Sleep(200 * time.Millisecond)

	type snap struct {
		stmts, received, woke, hot, cold int64
	}
	take := func() []snap {
		s := make([]snap, procs)
		for i, p := range ps {
			s[i] = snap{p.stmts.Load(), p.received.Load(), p.woke.Load(), p.hot.Load(), p.cold.Load()}
		}
		return s
	}
	// ticks sums the CPU of the processes' backends: the LISTENing ones
	// only, or all of them.
	ticks := func(listeners bool) (int64, bool) {
		var sum int64
		all := true
		for _, p := range ps {
			n, ok := backendCPU(t, tg.SQL, p.app, listeners)
			sum += n
			all = all && ok
		}
		return sum, all
	}

	hs := make([]*holders, hot)
	for i := range hs {
		hs[i] = &holders{}
	}
	var notAcquired, failed atomic.Int64
	var hotGot sync.Map // "proc/hot" -> true
	stop := make(chan struct{})
	var wg sync.WaitGroup
	before, cpu0 := take(), processCPU()
	lt0, lok0 := ticks(true)
	at0, aok0 := ticks(false)
	start := time.Now()
	for pi, p := range ps {
		m := lease.NewManager(countingWaiter{p.store, &p.woke})
		for w := range cold {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// This worker's names: 1 + hot onwards, none shared.
				var own []string
				for i := 1 + hot + pi*cold + w; i < names; i += procs * cold {
					own = append(own, name(i))
				}
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
					l, err := m.Acquire(context.Background(), own[k%len(own)], lease.TTL(5*time.Second))
					if err != nil {
						failed.Add(1)
						t.Errorf("cold acquire: %v", err)
						return
					}
					p.cold.Add(1)
					_ = l.Release(context.Background())
				}
			}()
		}
		for hi := range hot {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					l, err := m.Acquire(context.Background(), name(1+hi), lease.TTL(5*time.Second), lease.WaitAtMost(10*time.Second))
					if err != nil {
						if errors.Is(err, lease.ErrNotAcquired) {
							notAcquired.Add(1)
						} else {
							failed.Add(1)
							t.Errorf("hot acquire: %v", err)
						}
						continue
					}
					p.hot.Add(1)
					hotGot.Store(fmt.Sprint(pi, "/", hi), true)
					hs[hi].enter(l.Fence())
					time.Sleep(5 * time.Millisecond)
					hs[hi].leave()
					_ = l.Release(context.Background())
				}
			}()
		}
	}
	// Mid-run: the server's view.
	time.Sleep(run / 2)
	var usage float64
	var listening int
	noErr(t, tg.SQL.QueryRow(`SELECT pg_notification_queue_usage()`).Scan(&usage))
	noErr(t, tg.SQL.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE $1 AND query ~ '^(UN)?LISTEN'`, "i25scale_"+uniq+"_%").Scan(&listening))
	var backends int
	noErr(t, tg.SQL.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE $1`, "i25scale_"+uniq+"_%").Scan(&backends))
	time.Sleep(run - run/2)
	lt1, lok1 := ticks(true)
	at1, aok1 := ticks(false)
	close(stop)
	took := time.Since(start)
	cpu := processCPU() - cpu0
	wg.Wait()
	after := take()

	var received, woke, acq, stmts int64
	for i := range ps {
		d := snap{after[i].stmts - before[i].stmts, after[i].received - before[i].received, after[i].woke - before[i].woke, after[i].hot - before[i].hot, after[i].cold - before[i].cold}
		received += d.received
		woke += d.woke
		acq += d.hot + d.cold
		stmts += d.stmts
		t.Logf("process %d: %.0f notifications received/s, %.0f WaitFree returns/s (%.1f%% of the notifications); %d hot + %d cold acquisitions, %.2f statements per acquisition",
			i, float64(d.received)/took.Seconds(), float64(d.woke)/took.Seconds(), 100*float64(d.woke)/float64(max(d.received, 1)), d.hot, d.cold, float64(d.stmts)/float64(max(d.hot+d.cold, 1)))
	}
	tick := time.Second / 100 // USER_HZ on Linux
	t.Logf("%d processes x %d names (%d hot, %d waiters each) for %v: %d acquisitions (%.0f/s), %d notifications received in all (%.0f/s, %.1f per acquisition), %d WaitFree returns; %.2f statements per acquisition",
		procs, names, hot, procs, took.Round(time.Millisecond), acq, float64(acq)/took.Seconds(), received, float64(received)/took.Seconds(), float64(received)/float64(max(acq, 1)), woke, float64(stmts)/float64(max(acq, 1)))
	t.Logf("client CPU (this test process, every pool): %v, %.1f µs per acquisition, %.1f µs per notification received",
		cpu.Round(time.Millisecond), float64(cpu.Microseconds())/float64(max(acq, 1)), float64(cpu.Microseconds())/float64(max(received, 1)))
	if lok0 && lok1 && aok0 && aok1 {
		t.Logf("server CPU: the %d LISTEN backends %v (%.1f µs per notification received), all %d backends of the processes %v",
			listening, time.Duration(lt1-lt0)*tick, float64((time.Duration(lt1-lt0)*tick).Microseconds())/float64(max(received, 1)), backends, time.Duration(at1-at0)*tick)
	} else {
		t.Logf("server CPU: /proc of the backends not readable (the server is not on this machine)")
	}
	t.Logf("mid-run: pg_notification_queue_usage() %.6f, %d LISTEN backends, %d backends of the processes", usage, listening, backends)
	for hi, h := range hs {
		want(t, h.overlaps == 0 && h.regressed == 0, "hot name %d: %v", hi, h)
	}
	want(t, notAcquired.Load() == 0 && failed.Load() == 0, "%d waits ran out, %d acquisitions failed", notAcquired.Load(), failed.Load())
	for pi := range procs {
		for hi := range hot {
			_, ok := hotGot.Load(fmt.Sprint(pi, "/", hi))
			want(t, ok, "process %d never got hot name %d", pi, hi)
		}
	}
}
