package holds_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/require"
)

// TestForceReleaseStaleHolder: an operator's force-release frees the slot
// at once; the stale holder's Extend and Release report ErrLost (Extend
// also ErrNotActive), never a silent success, and do not revive the hold;
// a holder filter ends only that holder's hold.
func TestForceReleaseStaleHolder(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		ctx := context.Background()
		s := newSeat(t, tg.DB, 1)
		id := fmt.Sprint(s.ID)
		alice, err := holds.Acquire(ctx, tg.DB, s, "alice", holds.TTL(time.Minute), inTable)
		require.NoError(t, err)
		n, err := holds.ForceRelease(ctx, tg.DB, seatsTable, id, "", inTable)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		bob, err := holds.Acquire(ctx, tg.DB, s, "bob", inTable)
		require.NoError(t, err, "the force-released slot is not free at once")

		err = alice.Extend(ctx, time.Hour)
		if !errors.Is(err, holds.ErrLost) || !errors.Is(err, holds.ErrNotActive) {
			t.Fatalf("stale holder's Extend: %v, want ErrLost and ErrNotActive", err)
		}
		t.Logf("%s: stale Extend: %v", tg.Name, err)
		require.ErrorIs(t, alice.Release(ctx), holds.ErrLost)
		require.ErrorIs(t, holds.Release(ctx, tg.DB, &holds.Hold{ID: alice.ID}, inTable), holds.ErrLost, "a hand-built copy")
		if n := activeRows(t, tg.DB, s); n != 1 {
			t.Fatalf("%d active holds after the stale holder's calls, want bob's 1", n)
		}
		// A holder filter: only carol's hold ends.
		require.NoError(t, tg.DB.Model(s).Update("capacity", 3).Error)
		carol, err := holds.Acquire(ctx, tg.DB, s, "carol", inTable)
		require.NoError(t, err)
		n, err = holds.ForceRelease(ctx, tg.DB, seatsTable, id, "carol", inTable)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.ErrorIs(t, carol.Release(ctx), holds.ErrLost)
		require.NoError(t, bob.Release(ctx))
		n, err = holds.ForceRelease(ctx, tg.DB, seatsTable, id, "", inTable)
		require.NoError(t, err)
		require.Equal(t, 0, n, "nothing left to end")
	})
}

// TestForceReleaseRace: workers acquire, extend and release slots of a
// seat of capacity 3 while an operator force-releases its holds again and
// again; a sampler counts the seat's active holds throughout. The stale
// holders' Extend must fail (ErrLost): with holds.Extend no sample ever
// sees more than 3. The naive variant shows that the check can fail: a
// stale holder that "extends" with an UPDATE that does not ask whether the
// hold is still active revives it, and the seat is oversold.
func TestForceReleaseRace(t *testing.T) {
	for _, kind := range []string{testdb.SQLite, testdb.Postgres, testdb.MySQL} {
		t.Run(kind, func(t *testing.T) {
			tg := testdb.Get(t, kind)
			setup(t, tg)
			naive := forceRace(t, tg, true)
			for try := 1; try < 15 && naive.over == 0; try++ { // SQLite's single writer makes the window narrow: 5 tries missed it 1 run in 12
				naive = forceRace(t, tg, true)
			}
			if naive.over == 0 {
				t.Fatalf("naive extend: no oversold sample in %d samples: this race cannot fail", naive.samples)
			}
			got := forceRace(t, tg, false)
			t.Logf("%s: naive extend: %d of %d samples above capacity (max %d), %d revived; holds.Extend: %d of %d above capacity, %d stale Extends got ErrLost, %d grants, %d forced",
				tg.Name, naive.over, naive.samples, naive.max, naive.lost, got.over, got.samples, got.lost, got.grants, got.forced)
			if got.over != 0 {
				t.Fatalf("%d of %d samples saw more than 3 active holds (max %d)", got.over, got.samples, got.max)
			}
			if got.lost == 0 || got.forced == 0 {
				t.Fatalf("no stale holder met a force-release (%d forced): the race did not happen", got.forced)
			}
		})
	}
}

type raceResult struct {
	samples, over, max, lost, grants, forced int64
}

func forceRace(t *testing.T, tg *testdb.Target, naive bool) raceResult {
	t.Helper()
	const capacity, workers, rounds = 3, 6, 25
	ctx := context.Background()
	s := newSeat(t, tg.DB, capacity)
	var res raceResult
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { // the operator
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			n, err := holds.ForceRelease(ctx, tg.DB, seatsTable, fmt.Sprint(s.ID), "", inTable)
			if err != nil && !busy(err) {
				t.Error(err)
				return
			}
			atomic.AddInt64(&res.forced, int64(n))
		}
	}()
	go func() { // the sampler
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var n int64
			if err := tg.DB.Table(holdsTable).Where("resource_type = ? AND resource_id = ? AND released_at IS NULL", seatsTable, fmt.Sprint(s.ID)).Count(&n).Error; err != nil {
				if !busy(err) {
					t.Error(err)
					return
				}
				continue
			}
			atomic.AddInt64(&res.samples, 1)
			if n > capacity {
				atomic.AddInt64(&res.over, 1)
			}
			for m := atomic.LoadInt64(&res.max); n > m && !atomic.CompareAndSwapInt64(&res.max, m, n); m = atomic.LoadInt64(&res.max) {
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for r := 0; r < rounds; r++ {
				h, err := holds.Acquire(ctx, tg.DB, s, fmt.Sprintf("w%d", w), inTable)
				if errors.Is(err, holds.ErrFull) || busy(err) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				atomic.AddInt64(&res.grants, 1)
				time.Sleep(2 * time.Millisecond) // work under the hold; the operator may end it
				if naive {
					// A silent-success extend: no question whether the hold
					// is still this holder's.
					// It changes a row only when the operator had
					// ended the hold (this worker has not released it):
					// a revival.
					if n, err := rawExec(tg.DB, "UPDATE "+holdsTable+" SET released_at = NULL WHERE id = ? AND released_at IS NOT NULL", h.ID); err == nil && n == 1 {
						atomic.AddInt64(&res.lost, 1)
					}
				} else if err := h.Extend(ctx, 0); errors.Is(err, holds.ErrLost) {
					atomic.AddInt64(&res.lost, 1)
					continue
				} else if err != nil && !busy(err) {
					t.Error(err)
					return
				}
				time.Sleep(2 * time.Millisecond)
				if err := h.Release(ctx); err != nil && !errors.Is(err, holds.ErrLost) && !busy(err) {
					t.Error(err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(stop)
	bg.Wait()
	// Leave no revived hold behind for the next variant.
	require.NoError(t, tg.DB.Table(holdsTable).Where("released_at IS NULL").Update("released_at", 1).Error)
	return res
}

// rawExec runs a statement and returns the rows it affected.
func rawExec(db *gorm.DB, q string, args ...any) (int64, error) {
	r := db.Exec(q, args...)
	return r.RowsAffected, r.Error
}

// busy is SQLite's "database is locked" under this much writing; anything
// else is a real error.
func busy(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "database is locked") || strings.Contains(err.Error(), "SQLITE_BUSY"))
}
