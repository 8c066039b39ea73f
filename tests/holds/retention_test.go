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

	"github.com/stretchr/testify/require"

	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// histRows counts the hold rows of the i26_ table matching where.
func histRows(t testing.TB, tg *testdb.Target, where string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, tg.DB.Table(histHolds).Where(where, args...).Count(&n).Error)
	return n
}

// insertHold writes one hold row by SQL; times are epoch ms (nil: NULL).
func insertHold(t testing.TB, tg *testdb.Target, s *histSeat, holder string, created int64, expires, released *int64) {
	t.Helper()
	require.NoError(t, tg.DB.Exec("INSERT INTO "+histHolds+" (resource_type, resource_id, holder, created_at, expires_at, released_at) VALUES (?, ?, ?, ?, ?, ?)",
		histSeats, fmt.Sprint(s.ID), holder, created, expires, released).Error)
}

func ms(v int64) *int64 { return &v }

// Purge deletes what ended before the cutoff, in batches, and nothing that
// is active: released and expired holds older than the age go, recent ones
// stay until the age is 0, live ones (no expiry, or expiring later) always
// stay.
func TestHoldsPurgeDeletesOnlyEnded(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		full, _ := histSetup(t, tg, 100)
		ctx := context.Background()
		now := time.Now().UnixMilli()
		hour := int64(3600_000)
		insertHold(t, tg, full, "live-forever", now-2*hour, nil, nil)
		insertHold(t, tg, full, "live-ttl", now-2*hour, ms(now+hour), nil)
		insertHold(t, tg, full, "released-old", now-3*hour, nil, ms(now-2*hour))
		insertHold(t, tg, full, "released-new", now-3*hour, nil, ms(now-60_000))
		insertHold(t, tg, full, "expired-old", now-3*hour, ms(now-2*hour), nil)
		insertHold(t, tg, full, "expired-new", now-3*hour, ms(now-60_000), nil)
		seedExpired(t, tg, full, 1200) // expired an hour ago: more than two batches
		h, err := holds.Acquire(ctx, tg.DB, full, "acquired", histTable, holds.TTL(time.Hour))
		require.NoError(t, err)

		n, err := holds.Purge(ctx, tg.DB, 90*time.Minute, histTable)
		require.NoError(t, err)
		require.EqualValues(t, 2, n, "older than 90 min: released-old and expired-old")
		n, err = holds.Purge(ctx, tg.DB, 30*time.Minute, histTable)
		require.NoError(t, err)
		require.EqualValues(t, 1200, n, "the seeded holds, expired an hour ago")
		n, err = holds.Purge(ctx, tg.DB, 0, histTable)
		require.NoError(t, err)
		require.EqualValues(t, 2, n, "released-new and expired-new")
		var left []string
		require.NoError(t, tg.DB.Table(histHolds).Order("holder").Pluck("holder", &left).Error)
		require.Equal(t, []string{"acquired", "live-forever", "live-ttl"}, left)
		require.NoError(t, h.Release(ctx))
		free, err := holds.Available(ctx, tg.DB, full, histTable)
		require.NoError(t, err)
		require.Equal(t, 98, free)

		_, err = holds.Purge(ctx, tg.DB, -time.Second, histTable)
		require.ErrorIs(t, err, holds.ErrInvalid)
		_, err = holds.Purge(ctx, tg.DB, time.Hour, holds.Table("x; DROP TABLE y"))
		require.ErrorIs(t, err, holds.ErrInvalid)
	})
}

// purgeRace runs 16 workers that acquire and release holds on one seat of
// capacity 3 (every fifth acquisition abandoned with a 20 ms TTL, never
// released), while purge runs in a loop. It returns the most holders ever
// inside at once, and how many of the workers' live holds were gone at
// their Release (ErrNotFound or ErrLost).
func purgeRace(t *testing.T, tg *testdb.Target, iters int, purge func(ctx context.Context) error) (maxInside, lost, granted, purges int64) {
	t.Helper()
	full, _ := histSetup(t, tg, 3)
	seedExpired(t, tg, full, 2000)
	ctx := context.Background()
	var inside, maxIn, lostN, grants, purged atomic.Int64
	stop := make(chan struct{})
	var pw sync.WaitGroup
	pw.Add(1)
	purgeErr := make(chan error, 1)
	go func() {
		defer pw.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := purge(ctx); err != nil {
				purgeErr <- err
				return
			}
			purged.Add(1)
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < iters; i++ {
				holder := fmt.Sprintf("w%d-%d", w, i)
				if w%5 == 0 && i%5 == 0 {
					// Abandoned: holds a slot for 20 ms, then expires.
					if _, err := holds.Acquire(ctx, tg.DB, full, holder, histTable, holds.TTL(20*time.Millisecond)); err != nil && !errors.Is(err, holds.ErrFull) {
						errs <- err
						return
					}
					continue
				}
				h, err := holds.Acquire(ctx, tg.DB, full, holder, histTable, holds.TTL(time.Hour))
				if errors.Is(err, holds.ErrFull) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				grants.Add(1)
				n := inside.Add(1)
				for m := maxIn.Load(); n > m && !maxIn.CompareAndSwap(m, n); m = maxIn.Load() {
				}
				time.Sleep(5 * time.Millisecond)
				inside.Add(-1)
				err = h.Release(ctx)
				switch {
				case errors.Is(err, holds.ErrNotFound), errors.Is(err, holds.ErrLost):
					if lostN.Add(1) == 1 {
						t.Logf("first live hold lost: %v", err)
					}
				case err != nil:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	pw.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	select {
	case err := <-purgeErr:
		require.NoError(t, err)
	default:
	}
	return maxIn.Load(), lostN.Load(), grants.Load(), purged.Load()
}

// Purge under 16 concurrent acquirers of a seat of capacity 3: never more
// than 3 holders inside, never a live hold removed. The baseline, a naive
// cleanup that deletes holds by age (created more than 1 ms ago), removes
// live holds: their holders' Release finds them gone, and the seat is
// oversold.
func TestHoldsPurgeUnderConcurrentAcquire(t *testing.T) {
	for _, kind := range []string{testdb.SQLite, testdb.Postgres, testdb.MySQL} {
		t.Run(kind, func(t *testing.T) {
			tg := testdb.Get(t, kind)
			naive := func(ctx context.Context) error {
				time.Sleep(time.Millisecond)
				return tg.DB.WithContext(ctx).Exec("DELETE FROM "+histHolds+" WHERE created_at < ?", time.Now().UnixMilli()-1).Error
			}
			maxIn, lost, granted, purges := purgeRace(t, tg, 30, naive)
			t.Logf("%s baseline (delete by age): max inside %d of 3, %d live holds removed, %d granted, %d cleanups", tg.Name, maxIn, lost, granted, purges)
			require.Positive(t, lost, "the naive cleanup should remove live holds")

			purge := func(ctx context.Context) error {
				_, err := holds.Purge(ctx, tg.DB, 0, histTable)
				return err
			}
			maxIn, lost, granted, purges = purgeRace(t, tg, 30, purge)
			t.Logf("%s holds.Purge(0): max inside %d of 3, %d live holds removed, %d granted, %d purges", tg.Name, maxIn, lost, granted, purges)
			require.LessOrEqual(t, maxIn, int64(3), "over capacity")
			require.Zero(t, lost, "a live hold was removed")
			require.Positive(t, granted)
			require.Positive(t, purges)
			require.Zero(t, histRows(t, tg, "released_at IS NOT NULL AND released_at < ?", time.Now().UnixMilli()-60_000), "history left")
		})
	}
}

// Misuse is refused with a clear error: a holder with a NUL byte before
// anything is sent, and a resource whose row says capacity 0 (a forgotten
// capacity column reads as 0) with an error that says so, not "all 0 slots
// are held".
func TestHoldsMisuse(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		full, _ := histSetup(t, tg, 2)
		ctx := context.Background()
		db, h := hooked(t, tg)
		h.reset()
		_, err := holds.Acquire(ctx, db, full, "bad\x00holder", histTable)
		require.ErrorIs(t, err, holds.ErrInvalid)
		require.Contains(t, err.Error(), "NUL")
		require.Zero(t, h.roundTrips(), "sent SQL for a holder with a NUL byte")

		zero := &histSeat{}
		require.NoError(t, tg.DB.Create(zero).Error)
		_, err = holds.Acquire(ctx, tg.DB, zero, "u", histTable)
		require.ErrorIs(t, err, holds.ErrNoCapacity)
		require.ErrorIs(t, err, holds.ErrFull, "a closed resource is still full to its callers")
		require.NotContains(t, err.Error(), "all 0 slots")
		require.True(t, strings.Contains(err.Error(), "capacity of 0"), err.Error())
		t.Log(err)
		require.Zero(t, histRows(t, tg, "1 = 1"))
	})
}
