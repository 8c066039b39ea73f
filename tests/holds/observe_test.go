package holds_test

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
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/observe"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/require"
)

// events records holds events as "kind name duration".
type events struct {
	mu  sync.Mutex
	got []observe.Event
}

func (r *events) Observe(e observe.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, e)
}

// take returns the kinds so far, and forgets them.
func (r *events) take() []observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

func kinds(evs []observe.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Kind.String())
	}
	return strings.Join(s, " ")
}

// expectEvents checks the exact sequence since the last check.
func expectEvents(t *testing.T, r *events, step, want string) []observe.Event {
	t.Helper()
	got := r.take()
	if kinds(got) != want {
		t.Fatalf("%s: events %q, want %q", step, kinds(got), want)
	}
	return got
}

// withObserver opens tg's database again, as another process would, with
// lockplugin and an Observer registered.
func withObserver(t *testing.T, tg *testdb.Target) (*gorm.DB, *events) {
	t.Helper()
	db, err := gorm.Open(testdb.Dialector(tg.Kind(), tg.DSN), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	t.Cleanup(func() { _ = sqlDB.Close() })
	rec := &events{}
	require.NoError(t, db.Use(lockplugin.New(lockplugin.WithObserver(rec))))
	return db, rec
}

// waitExpired sleeps until a hold's expiry has passed by the database
// clock (the TTLs here are short; the clocks of one machine agree).
func waitExpired(h *holds.Hold) {
	time.Sleep(time.Until(*h.ExpiresAt) + 50*time.Millisecond)
}

// TestObserverExpiredOnRead: the exact event sequence of a scripted run:
// grant, full, a hold that expires unreleased reported once by the first
// read that meets it (Available, then Acquire's count), never again by
// later reads, its holder's Release reporting ErrLost, a force-release, and
// two processes meeting the same expired hold at once reporting it once
// between them.
func TestObserverExpiredOnRead(t *testing.T) {
	for _, kind := range []string{testdb.SQLite, testdb.Postgres, testdb.MySQL} {
		t.Run(kind, func(t *testing.T) {
			tg := testdb.Get(t, kind)
			setup(t, tg)
			db, rec := withObserver(t, tg)
			ctx := context.Background()
			s := newSeat(t, tg.DB, 1)
			name := fmt.Sprintf("%s/%d", seatsTable, s.ID)
			ttl := holds.TTL(200 * time.Millisecond)

			alice, err := holds.Acquire(ctx, db, s, "alice", ttl, inTable)
			require.NoError(t, err)
			if e := expectEvents(t, rec, "grant", "hold_granted"); e[0].Name != name || e[0].Mechanism != observe.Holds {
				t.Fatalf("grant event %+v, want name %s", e[0], name)
			}
			_, err = holds.Acquire(ctx, db, s, "bob", inTable)
			require.ErrorIs(t, err, holds.ErrFull)
			expectEvents(t, rec, "full", "hold_full")

			waitExpired(alice)
			n, err := holds.Available(ctx, db, s, inTable)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			e := expectEvents(t, rec, "Available meets the expired hold", "hold_expired")
			if e[0].Name != name || e[0].Duration != 200*time.Millisecond {
				t.Fatalf("expired event %+v, want %s lasting 200ms", e[0], name)
			}
			_, err = holds.Available(ctx, db, s, inTable)
			require.NoError(t, err)
			full, err := holds.IsFull(ctx, db, s, inTable)
			require.NoError(t, err)
			require.False(t, full)
			got, err := holds.ActiveFor(ctx, db, s, "alice", inTable)
			require.NoError(t, err)
			require.Nil(t, got)
			expectEvents(t, rec, "later reads", "")
			require.ErrorIs(t, alice.Release(ctx), holds.ErrLost)
			expectEvents(t, rec, "the expired holder's Release", "")

			carol, err := holds.Acquire(ctx, db, s, "carol", ttl, inTable)
			require.NoError(t, err)
			expectEvents(t, rec, "grant after expiry", "hold_granted")
			waitExpired(carol)
			dave, err := holds.Acquire(ctx, db, s, "dave", inTable)
			require.NoError(t, err)
			expectEvents(t, rec, "Acquire's count meets the expired hold", "hold_expired hold_granted")
			require.NoError(t, dave.Release(ctx))
			require.NoError(t, dave.Release(ctx))
			expectEvents(t, rec, "release twice", "hold_released")

			erin, err := holds.Acquire(ctx, db, s, "erin", inTable)
			require.NoError(t, err)
			forced, err := holds.ForceRelease(ctx, db, seatsTable, fmt.Sprint(s.ID), "", inTable)
			require.NoError(t, err)
			require.Equal(t, 1, forced)
			require.ErrorIs(t, erin.Extend(ctx, time.Minute), holds.ErrLost)
			expectEvents(t, rec, "force-release, then the stale Extend", "hold_granted hold_force_released")

			// Two processes meet one expired hold together: one report.
			other, rec2 := withObserver(t, tg)
			for round := 0; round < 5; round++ {
				f, err := holds.Acquire(ctx, db, s, fmt.Sprint("frank", round), holds.TTL(50*time.Millisecond), inTable)
				require.NoError(t, err)
				rec.take()
				waitExpired(f)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for _, d := range []*gorm.DB{db, other, db, other} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						if _, err := holds.Available(ctx, d, s, inTable); err != nil {
							t.Error(err)
						}
					}()
				}
				close(start)
				wg.Wait()
				if both := kinds(append(rec.take(), rec2.take()...)); both != "hold_expired" {
					t.Fatalf("round %d: two processes reported %q, want one hold_expired", round, both)
				}
			}

			// Without an Observer nothing is swept: the expired hold stays
			// unmarked (released_at NULL) and simply stops counting.
			g, err := holds.Acquire(ctx, tg.DB, s, "gina", holds.TTL(50*time.Millisecond), inTable)
			require.NoError(t, err)
			waitExpired(g)
			_, err = holds.Available(ctx, tg.DB, s, inTable)
			require.NoError(t, err)
			var unmarked int64
			require.NoError(t, tg.DB.Table(holdsTable).Where("id = ? AND released_at IS NULL", g.ID).Count(&unmarked).Error)
			require.EqualValues(t, 1, unmarked, "a read without an Observer wrote")
			if err := g.Release(ctx); !errors.Is(err, holds.ErrLost) || !strings.Contains(err.Error(), "expired") {
				t.Fatalf("releasing the unmarked expired hold: %v", err)
			}
		})
	}
}
