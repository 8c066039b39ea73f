package holds_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/require"
)

// TestExtendRacesExpiry: a caller extends its hold inside a transaction
// that stays open past the hold's old expiry, while another holder
// acquires the resource. Whichever order the database picks, the resource
// must never have two active holds: an acquirer must not count the hold as
// expired while its extension is still to be committed. (Before Extend took
// the resource's row lock, the acquirer won at once on PostgreSQL and
// MariaDB, and both holds were active after the commit.)
func TestExtendRacesExpiry(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		ctx := context.Background()
		for _, hand := range []bool{false, true} {
			s := newSeat(t, tg.DB, 1)
			h, err := holds.Acquire(ctx, tg.DB, s, "user:1", holds.TTL(300*time.Millisecond), inTable)
			if err != nil || h == nil {
				t.Fatalf("Acquire = %+v, %v", h, err)
			}
			if hand {
				// A Hold built by hand does not know the resource's key
				// column: Extend finds it.
				h = &holds.Hold{ID: h.ID, ResourceType: h.ResourceType, ResourceID: h.ResourceID, Holder: h.Holder}
			}
			tx := tg.DB.Begin()
			require.NoError(t, tx.Error)
			extended := holds.Extend(ctx, tx, h, time.Minute, inTable)
			if extended != nil {
				tx.Rollback()
				t.Fatalf("Extend of a live hold: %v", extended)
			}

			// Wait until the old expiry has passed by the database clock,
			// as a reader outside the transaction sees it.
			deadline := time.Now().Add(5 * time.Second)
			for {
				n, err := holds.Available(ctx, tg.DB, s, inTable)
				require.NoError(t, err)
				if n == 1 || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}

			type result struct {
				h   *holds.Hold
				err error
			}
			done := make(chan result, 1)
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			go func() {
				o, err := holds.Acquire(actx, tg.DB, s, "user:2", inTable)
				done <- result{o, err}
			}()
			var r result
			finished := false
			select {
			case r = <-done: // granted or refused without waiting for the commit
				finished = true
			case <-time.After(500 * time.Millisecond): // queued behind the extension
			}
			require.NoError(t, tx.Commit().Error)
			if !finished {
				r = <-done
			}
			cancel()
			if n := activeRows(t, tg.DB, s); n > 1 {
				t.Fatalf("hand-built hold %v: %d active holds on a seat of capacity 1 (second acquirer: %+v, %v)", hand, n, r.h, r.err)
			}
			if !errors.Is(r.err, holds.ErrFull) || r.h != nil {
				t.Fatalf("hand-built hold %v: second acquirer = %+v, %v; want nil, ErrFull after the extension committed", hand, r.h, r.err)
			}
		}
	})
}
