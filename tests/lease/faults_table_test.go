package lease_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/faultproxy"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

const faultTable = "i10_fault_leases"

// tableTarget is the table store on a database of the test's own: the
// holder's path goes through the fault proxy, the rival's does not.
type tableTarget struct {
	name          string
	proxy         *faultproxy.Proxy // nil for SQLite, which has no wire
	holder, rival lease.Store
}

// ownTables starts PostgreSQL and MariaDB of the test's own, each behind a
// fault proxy, and opens SQLite in a temporary directory.
func ownTables(t *testing.T) []tableTarget {
	t.Helper()
	open := func(kind, dsn string) *gorm.DB {
		db, err := gorm.Open(testdb.Dialector(kind, dsn), &gorm.Config{Logger: logger.Discard})
		noErr(t, err, "opening ", kind)
		sqlDB, _ := db.DB()
		t.Cleanup(func() { _ = sqlDB.Close() })
		return db
	}
	store := func(db *gorm.DB) lease.Store {
		s, err := sqlstore.New(db, sqlstore.Table(faultTable))
		noErr(t, err, "sqlstore.New")
		return s
	}
	var out []tableTarget

	pg := servers.StartPostgres(t)
	pgProxy := faultproxy.Start(t, pg.Addr)
	viaProxy := fmt.Sprintf("host=127.0.0.1 port=%s user=postgres dbname=postgres sslmode=disable", portOf(pgProxy.Addr()))
	out = append(out, tableTarget{"postgres", pgProxy, store(open(testdb.Postgres, viaProxy)), store(open(testdb.Postgres, pg.DSN))})

	my := servers.StartMariaDB(t)
	myProxy := faultproxy.Start(t, my.Addr)
	// interpolateParams: one write per statement, for DropAfterWrite.
	myVia := fmt.Sprintf("root:@tcp(%s)/test?parseTime=true&interpolateParams=true", myProxy.Addr())
	out = append(out, tableTarget{"mariadb", myProxy, store(open(testdb.MySQL, myVia)), store(open(testdb.MySQL, my.DSN))})

	sq := open(testdb.SQLite, testdb.SQLiteDSN(filepath.Join(t.TempDir(), "fault.db")))
	out = append(out, tableTarget{name: "sqlite", holder: store(sq), rival: store(sq)})
	return out
}

func portOf(addr string) string { return addr[len("127.0.0.1:"):] }

// stall wraps a Store whose calls, while stalled, hang until the stall
// ends, ignoring their context: the worst client there is, for SQLite,
// which has no network path to partition.
type stall struct {
	lease.Store
	mu   sync.Mutex
	gate chan struct{} // closed: calls pass
}

func newStall(s lease.Store) *stall {
	g := make(chan struct{})
	close(g)
	return &stall{Store: s, gate: g}
}

func (s *stall) set(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.gate:
		if on {
			s.gate = make(chan struct{})
		}
	default:
		if !on {
			close(s.gate)
		}
	}
}

func (s *stall) wait() {
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	<-g
}

func (s *stall) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	s.wait()
	return s.Store.Acquire(ctx, name, owner, ttl)
}

func (s *stall) Refresh(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	s.wait()
	return s.Store.Refresh(ctx, name, owner, ttl)
}

func (s *stall) Release(ctx context.Context, name, owner string) (bool, error) {
	s.wait()
	return s.Store.Release(ctx, name, owner)
}

// TestFaultTable runs the fault attacks on the table store, on a
// PostgreSQL and a MariaDB of the test's own through the fault proxy, and
// on SQLite through a store wrapper that hangs its calls.
func TestFaultTable(t *testing.T) {
	for _, tg := range ownTables(t) {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel() // each on its own server: about 30 s each
			holder := tg.holder
			var partition, heal func()
			var slow func()
			if tg.proxy != nil {
				partition = func() { tg.proxy.Blackhole(true) }
				slow = func() { tg.proxy.SetDelay(250*time.Millisecond, 250*time.Millisecond) }
				heal = tg.proxy.Heal
			} else {
				st := newStall(tg.holder)
				holder = st
				partition = func() { st.set(true) }
				heal = func() { st.set(false) }
			}
			t.Cleanup(heal)
			if tg.proxy != nil {
				t.Run("LostAcquireReply", func(t *testing.T) { tableLostReply(t, tg) })
			}
			t.Run("Partition", func(t *testing.T) { tableTakeovers(t, holder, tg.rival, partition, heal, false) })
			if slow != nil {
				t.Run("SlowReplies", func(t *testing.T) { tableTakeovers(t, holder, tg.rival, slow, heal, true) })
			}
			t.Run("BlackholeIsBounded", func(t *testing.T) { tableBounded(t, holder, partition, heal) })
		})
	}
}

// tableLostReply: the proxy mutes the database's answers right after the
// acquire statement is sent (the database runs it). Within a bounded time
// the name must be held by the caller or free; the baseline, a bare store
// call whose caller gives up, leaves it held by an owner nobody has.
func tableLostReply(t *testing.T, tg tableTarget) {
	ctx := context.Background()
	// aim is how many client writes an acquire of a fresh name takes: the
	// reply to mute is the one after the last of them, the write that takes
	// the lease (PostgreSQL sends one statement; MariaDB an UPDATE that
	// matches nothing, then the INSERT).
	aim := 1
	warm := func() {
		// The same acquire statements first, on a fresh name as the attack
		// uses, so that they are prepared on the pooled connection; twice,
		// so that the second counts the writes of a prepared acquire.
		// A drop armed for the last attack that its abandoned call never
		// reached must not fall on the warm-up: heal first, and bound each
		// call, so that a connection muted by an earlier attack times out
		// (the driver discards it) instead of hanging the test.
		tg.proxy.Heal()
		retries := 0
		for i := 0; i < 2; i++ {
			name, o := fmt.Sprintf("warm-up-%d", time.Now().UnixNano()), randomOwner()
			before := tg.proxy.Writes()
			wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, _, err := tg.holder.Acquire(wctx, name, o, time.Minute)
			if err == nil {
				aim = int(tg.proxy.Writes() - before)
				_, err = tg.holder.Release(wctx, name, o)
			}
			cancel()
			if err != nil && errors.Is(err, context.DeadlineExceeded) && retries < 5 {
				retries++
				i-- // a muted pooled connection, now discarded: again
				continue
			}
			noErr(t, err, "warm-up")
		}
	}
	heldBy := func(name string) string {
		// Who holds name, seen through the rival: a stranger's Refresh
		// does nothing; an Acquire by a fresh owner would take a free one.
		o := randomOwner()
		_, ok, err := tg.rival.Acquire(ctx, name, o, time.Minute)
		noErr(t, err, "probe")
		if ok {
			_, _ = tg.rival.Release(ctx, name, o)
			return ""
		}
		return "someone"
	}
	type counts struct{ held, free, ghosts int }

	var base counts
	for i := range 10 {
		name := fmt.Sprintf("lost-base-%d-%d", time.Now().UnixNano(), i)
		warm()
		tg.proxy.DropAfterWrite(aim)
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, _, err := tg.holder.Acquire(cctx, name, randomOwner(), time.Minute)
		cancel()
		if err != nil && heldBy(name) != "" {
			base.ghosts++
		} else {
			base.free++
		}
	}
	t.Logf("baseline, a bare store call whose caller gives up: %+v", base)
	want(t, base.ghosts > 0, "the baseline made no ghost (%+v): the attack cannot fail", base)

	// A short CallTimeout keeps each lost reply short (the default is 5 s).
	m := lease.NewManager(tg.holder, lease.CallTimeout(50*time.Millisecond))
	var got counts
	const runs = 100
	for i := range runs {
		name := fmt.Sprintf("lost-%d-%d", time.Now().UnixNano(), i)
		warm()
		tg.proxy.DropAfterWrite(aim)
		l, err := m.Acquire(ctx, name, lease.TTL(time.Minute))
		if err == nil {
			got.held++
			// The 50 ms CallTimeout is for the lost replies; on a loaded
			// machine an answered Release can take longer, and Release is
			// made to be retried.
			// Retried for up to 10 s, with pauses: while other packages
			// load the shared server, 20 tries back to back all ran out.
			err := l.Release(ctx)
			for end := time.Now().Add(10 * time.Second); errors.Is(err, lease.ErrStoreTimeout) && time.Now().Before(end); {
				time.Sleep(20 * time.Millisecond)
				err = l.Release(ctx)
			}
			noErr(t, err)
			continue
		}
		want(t, !errors.Is(err, lease.ErrNotAcquired), "run %d: a lost reply reported as ErrNotAcquired: %v", i, err)
		free := false
		// The Manager's release of the unknown outcome: it retries with
		// backoff until the TTL (a minute) has passed; on a loaded server
		// its first tries may run out, so wait up to 10 s, not 1.
		for range 1000 {
			if heldBy(name) == "" {
				free = true
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if free {
			got.free++
		} else {
			got.ghosts++
		}
	}
	t.Logf("Manager: %+v", got)
	want(t, got.ghosts == 0 && got.held+got.free == runs, "%d ghost leases in %d runs", got.ghosts, runs)
}

// tableTakeovers: as TestFaultRedisPartition and TestFaultRedisSlowReplies,
// on the table store.
func tableTakeovers(t *testing.T, holderStore, rival lease.Store, fault, heal func(), baseline bool) {
	run := func(naive bool, runs int) *summary {
		var sum summary
		for i := range runs {
			name := fmt.Sprintf("takeover-%v-%d-%d", naive, time.Now().UnixNano(), i)
			holder := func(fn func(context.Context)) error {
				if naive {
					return naiveDo(context.Background(), holderStore, name, kaTTL, kaInterval, fn)
				}
				return lease.NewManager(holderStore).Do(context.Background(), name, func(ctx context.Context) error { fn(ctx); return nil },
					lease.TTL(kaTTL), lease.KeepAlive(kaInterval))
			}
			sum.add(runTakeover(t, name, holder, fault, rival))
			heal()
		}
		return &sum
	}
	if baseline {
		base := run(true, 3)
		t.Logf("baseline, no safety deadline: %v", base)
	}
	got := run(false, 20)
	t.Logf("Manager: %v", got)
	want(t, got.ok(), "VIOLATED: %v", got)
}

// tableBounded: as TestFaultRedisBlackholeIsBounded, on the table store.
func tableBounded(t *testing.T, s lease.Store, partition, heal func()) {
	m := lease.NewManager(s)
	partition()
	defer heal()
	for _, c := range []struct {
		what string
		f    func() error
	}{
		{"Do, 1 s context", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return m.Do(ctx, "bounded", func(context.Context) error { return errors.New("fn ran without a lease") })
		}},
		{"Acquire, Background and Wait(1s)", func() error {
			_, err := m.Acquire(context.Background(), "bounded", lease.WaitAtMost(time.Second))
			return err
		}},
	} {
		start := time.Now()
		err := c.f()
		el := time.Since(start)
		t.Logf("%s: %v after %v", c.what, err, el.Round(time.Millisecond))
		want(t, err != nil && !errors.Is(err, lease.ErrNotAcquired) && errors.Is(err, lease.ErrStoreTimeout), "%s: %v, want ErrStoreTimeout, not ErrNotAcquired", c.what, err)
		want(t, el < 2*time.Second, "%s returned after %v, want < 2 s", c.what, el)
	}
}
