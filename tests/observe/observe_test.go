// Package observe_test checks that the Observer hook (package observe) sees
// the exact sequence of events of a scripted run of every mechanism, on
// every reachable database and on Redis. Its tables, lock names and keys
// start with "i17_".
package observe_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/observe"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// recorder keeps the events it is given, as short strings, and the last
// event of each kind, for their fields.
type recorder struct {
	mu     sync.Mutex
	events []string
	last   map[observe.Kind]observe.Event
}

func (r *recorder) Observe(e observe.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := e.Mechanism.String() + " " + e.Kind.String()
	if e.Outcome != 0 {
		s += " " + e.Outcome.String()
	}
	r.events = append(r.events, s)
	if r.last == nil {
		r.last = map[observe.Kind]observe.Event{}
	}
	r.last[e.Kind] = e
}

// take returns the events so far and forgets them.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.events
	r.events = nil
	return ev
}

func (r *recorder) lastOf(k observe.Kind) observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[k]
}

func expect(t *testing.T, r *recorder, step string, want ...string) {
	t.Helper()
	got := r.take()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s: events\n  %s\nwant\n  %s", step, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// observed opens kind's database again with lockplugin registered with
// an Observer.
func observed(t *testing.T, kind string) (*gorm.DB, *testdb.Target, *recorder) {
	t.Helper()
	tg := testdb.Get(t, kind)
	db, err := gorm.Open(testdb.Dialector(kind, tg.DSN), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { _ = sqlDB.Close() })
	rec := &recorder{}
	if err := db.Use(lockplugin.New(lockplugin.WithObserver(rec))); err != nil {
		t.Fatal(err)
	}
	return db, tg, rec
}

var kinds = []string{testdb.SQLite, testdb.Postgres, testdb.MySQL}

type i17Book struct {
	ID    uint
	Title string
	lockplugin.Version
}

func (i17Book) TableName() string { return "i17_obs_books" }

func TestObserverVersion(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			db, _, rec := observed(t, kind)
			_ = db.Migrator().DropTable(&i17Book{})
			if err := db.AutoMigrate(&i17Book{}); err != nil {
				t.Fatal(err)
			}
			b := i17Book{Title: "a"}
			if err := db.Create(&b).Error; err != nil {
				t.Fatal(err)
			}
			var x, y i17Book
			db.First(&x, b.ID)
			db.First(&y, b.ID)
			x.Title = "x"
			if err := db.Save(&x).Error; err != nil {
				t.Fatal(err)
			}
			expect(t, rec, "a fresh write")
			y.Title = "y"
			if err := db.Save(&y).Error; !errors.Is(err, lockplugin.ErrConcurrency) {
				t.Fatalf("stale write: %v", err)
			}
			expect(t, rec, "a stale write", "version conflict")
			if e := rec.lastOf(observe.Conflict); e.Name != "i17_obs_books" || !errors.Is(e.Err, lockplugin.ErrConcurrency) {
				t.Fatalf("conflict event %+v", e)
			}

			// RetryOnConflict: the first attempt writes a stale copy.
			attempt := 0
			err := lockplugin.RetryOnConflict(context.Background(), db, 3, func(tx *gorm.DB) error {
				attempt++
				var z i17Book
				if err := tx.First(&z, b.ID).Error; err != nil {
					return err
				}
				if attempt == 1 {
					z.Version = 1 // read long ago
				}
				z.Title = fmt.Sprint("r", attempt)
				return tx.Save(&z).Error
			})
			if err != nil {
				t.Fatal(err)
			}
			expect(t, rec, "a retried transaction", "version conflict", "retry retried")
			if e := rec.lastOf(observe.Retried); e.Attempt != 2 || !errors.Is(e.Err, lockplugin.ErrConcurrency) {
				t.Fatalf("retry event %+v", e)
			}
		})
	}
}

func TestObserverAdvisory(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			db, _, rec := observed(t, kind)
			ctx := context.Background()
			name := testdb.Unique(t, "i17_adv")
			if kind == testdb.SQLite {
				if _, err := advisory.Acquire(ctx, db, name); err == nil {
					t.Fatal("SQLite granted an advisory lock")
				}
				expect(t, rec, "unsupported", "advisory wait_started", "advisory wait_ended error")
				return
			}
			a, err := advisory.Acquire(ctx, db, name)
			if err != nil {
				t.Fatal(err)
			}
			expect(t, rec, "acquire", "advisory wait_started", "advisory wait_ended acquired", "advisory held")
			if _, err := advisory.Acquire(ctx, db, name, advisory.WaitAtMost(0)); !errors.Is(err, advisory.ErrTimeout) {
				t.Fatalf("second acquire: %v", err)
			}
			expect(t, rec, "busy", "advisory wait_started", "advisory wait_ended busy")
			if _, err := advisory.Acquire(ctx, db, name, advisory.WaitAtMost(time.Second)); !errors.Is(err, advisory.ErrTimeout) {
				t.Fatalf("waiting acquire: %v", err)
			}
			expect(t, rec, "timeout", "advisory wait_started", "advisory wait_ended timeout")
			if e := rec.lastOf(observe.WaitEnded); e.Duration < 900*time.Millisecond || e.Name != name {
				t.Fatalf("timeout event %+v", e)
			}
			time.Sleep(10 * time.Millisecond)
			if err := a.Release(ctx); err != nil {
				t.Fatal(err)
			}
			expect(t, rec, "release", "advisory released")
			if e := rec.lastOf(observe.Released); e.Duration < 10*time.Millisecond {
				t.Fatalf("released event %+v", e)
			}
			_ = a.Release(ctx) // a second release reports nothing
			expect(t, rec, "second release")
		})
	}
}

type i17Seat struct {
	ID       uint
	Capacity int
}

func (i17Seat) TableName() string { return "i17_obs_seats" }

func (s i17Seat) HoldCapacity() int { return s.Capacity }

func TestObserverHolds(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			db, _, rec := observed(t, kind)
			ctx := context.Background()
			in := holds.Table("i17_obs_holds")
			_ = db.Migrator().DropTable(&i17Seat{}, "i17_obs_holds")
			if err := db.AutoMigrate(&i17Seat{}); err != nil {
				t.Fatal(err)
			}
			if err := holds.Migrate(db, in); err != nil {
				t.Fatal(err)
			}
			s := i17Seat{Capacity: 1}
			db.Create(&s)
			h, err := holds.Acquire(ctx, db, &s, "alice", in)
			if err != nil || h == nil {
				t.Fatalf("acquire: %v %v", h, err)
			}
			expect(t, rec, "grant", "holds hold_granted")
			if e := rec.lastOf(observe.HoldGranted); e.Name != fmt.Sprint("i17_obs_seats/", s.ID) {
				t.Fatalf("granted event %+v", e)
			}
			if h2, err := holds.Acquire(ctx, db, &s, "bob", in); !errors.Is(err, holds.ErrFull) || h2 != nil {
				t.Fatalf("full: %v %v", h2, err)
			}
			expect(t, rec, "full", "holds hold_full")
			if err := holds.Release(ctx, db, h, in); err != nil {
				t.Fatal(err)
			}
			expect(t, rec, "release", "holds hold_released")
		})
	}
}

func TestObserverLease(t *testing.T) {
	stores := map[string]func(t *testing.T) lease.Store{
		"redis": func(t *testing.T) lease.Store {
			c := testdb.Redis(t)
			return redisstore.New(c, redisstore.Prefix("i17_obs:"))
		},
	}
	for _, kind := range kinds {
		stores[kind] = func(t *testing.T) lease.Store {
			tg := testdb.Get(t, kind)
			s, err := sqlstore.New(tg.DB, sqlstore.Table("i17_obs_leases"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	for _, name := range []string{testdb.SQLite, testdb.Postgres, testdb.MySQL, "redis"} {
		t.Run(name, func(t *testing.T) {
			store := stores[name](t)
			rec := &recorder{}
			m := lease.NewManager(store, lease.WithObserver(rec), lease.PollInterval(20*time.Millisecond))
			ctx := context.Background()
			lock := testdb.Unique(t, "i17_lease")
			a, err := m.Acquire(ctx, lock, lease.TTL(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			expect(t, rec, "acquire", "lease wait_started", "lease wait_ended acquired", "lease held")
			if e := rec.lastOf(observe.Held); e.Fence != a.Fence() || e.Name != lock {
				t.Fatalf("held event %+v, fence %d", e, a.Fence())
			}
			if _, err := m.Acquire(ctx, lock); !errors.Is(err, lease.ErrNotAcquired) {
				t.Fatalf("busy: %v", err)
			}
			expect(t, rec, "busy", "lease wait_started", "lease wait_ended busy")
			if _, err := m.Acquire(ctx, lock, lease.WaitAtMost(100*time.Millisecond)); !errors.Is(err, lease.ErrNotAcquired) {
				t.Fatalf("wait: %v", err)
			}
			expect(t, rec, "timeout", "lease wait_started", "lease wait_ended timeout")
			if err := a.Refresh(ctx, 0); err != nil {
				t.Fatal(err)
			}
			expect(t, rec, "refresh", "lease refreshed")
			// An operator frees the lease under the holder: its next
			// refresh finds it gone.
			if ok, err := store.Release(ctx, lock, a.Owner()); !ok || err != nil {
				t.Fatalf("store release: %v %v", ok, err)
			}
			if err := a.Refresh(ctx, 0); !errors.Is(err, lease.ErrLeaseLost) {
				t.Fatalf("refresh of a freed lease: %v", err)
			}
			expect(t, rec, "lost", "lease lost")
			if err := a.Refresh(ctx, 0); !errors.Is(err, lease.ErrLeaseLost) {
				t.Fatalf("second refresh: %v", err)
			}
			expect(t, rec, "lost once")
			if err := a.Release(ctx); !errors.Is(err, lease.ErrLeaseLost) {
				t.Fatalf("release of a lost lease: %v", err)
			}
			expect(t, rec, "release", "lease released")

			// A lease whose safety deadline passes without a refresh.
			b, err := m.Acquire(ctx, lock, lease.TTL(400*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			<-b.Done()
			expect(t, rec, "deadline", "lease wait_started", "lease wait_ended acquired", "lease held", "lease lost")
			_ = b.Release(ctx)
			rec.take()
		})
	}
}
