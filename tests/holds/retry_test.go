package holds_test

import (
	"context"
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/require"
)

// TestReplayRetryable: an insert that fails with a retryable error after
// writing its row is rolled back and replayed; the third attempt succeeds and
// leaves exactly one hold.
func TestReplayRetryable(t *testing.T) {
	testdb.Each(t, func(t *testing.T, shared *testdb.Target) {
		tg := shared
		setup(t, tg)
		db, hk := hooked(t, tg)
		s := newSeat(t, tg.DB, 1)
		calls := injectAfterInsert(hk, 2, retryableErr{})
		h, err := holds.Acquire(context.Background(), db, s, "user:1", inTable)
		if err != nil || h == nil {
			t.Fatalf("Acquire = %+v, %v; want a hold on the third attempt", h, err)
		}
		if c := calls.Load(); c != 3 {
			t.Fatalf("%d attempts, want 3", c)
		}
		if n := holdRows(t, tg.DB, s); n != 1 {
			t.Fatalf("%d hold rows, want 1", n)
		}
	})
}

// TestReplaySurfacesFourthError: a retryable error that keeps coming back is
// replayed three times and returned from the fourth attempt, and no partial
// hold is left behind.
func TestReplaySurfacesFourthError(t *testing.T) {
	testdb.Each(t, func(t *testing.T, shared *testdb.Target) {
		tg := shared
		setup(t, tg)
		db, hk := hooked(t, tg)
		s := newSeat(t, tg.DB, 1)
		calls := injectAfterInsert(hk, 1000, retryableErr{})
		h, err := holds.Acquire(context.Background(), db, s, "user:1", inTable)
		if !errors.As(err, new(retryableErr)) || !dialects.IsRetryable(err) || h != nil {
			t.Fatalf("Acquire = %+v, %v; want the injected error", h, err)
		}
		if c := calls.Load(); c != 4 {
			t.Fatalf("%d attempts, want 4", c)
		}
		if n := holdRows(t, tg.DB, s); n != 0 {
			t.Fatalf("%d hold rows left behind, want 0", n)
		}
	})
}

// TestNoReplayOnOtherErrors: an error that is not retryable is returned from
// the first attempt.
func TestNoReplayOnOtherErrors(t *testing.T) {
	testdb.Each(t, func(t *testing.T, shared *testdb.Target) {
		tg := shared
		setup(t, tg)
		db, hk := hooked(t, tg)
		s := newSeat(t, tg.DB, 1)
		boom := errors.New("boom")
		calls := injectAfterInsert(hk, 1000, boom)
		h, err := holds.Acquire(context.Background(), db, s, "user:1", inTable)
		if !errors.Is(err, boom) || h != nil {
			t.Fatalf("Acquire = %+v, %v; want boom", h, err)
		}
		if c := calls.Load(); c != 1 {
			t.Fatalf("%d attempts, want 1", c)
		}
		if n := holdRows(t, tg.DB, s); n != 0 {
			t.Fatalf("%d hold rows left behind, want 0", n)
		}
	})
}

// TestReplayInCallerTransaction: inside the caller's transaction, replays
// roll back to a savepoint; the caller's own work survives both a replayed
// success and a surfaced failure, and nothing is committed or rolled back
// behind its back.
func TestReplayInCallerTransaction(t *testing.T) {
	testdb.Each(t, func(t *testing.T, shared *testdb.Target) {
		tg := shared
		setup(t, tg)
		db, hk := hooked(t, tg)
		ctx := context.Background()
		s := newSeat(t, tg.DB, 1)
		calls := injectAfterInsert(hk, 2, retryableErr{})
		var mine, theirs *seat
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			mine = newSeat(t, tx, 5) // the caller's own work
			h, err := holds.Acquire(ctx, tx, s, "user:1", inTable)
			if err != nil || h == nil {
				t.Errorf("Acquire in the caller's transaction = %+v, %v", h, err)
			}
			return err
		}))
		if c := calls.Load(); c != 3 {
			t.Fatalf("%d attempts, want 3", c)
		}
		if n := holdRows(t, tg.DB, s); n != 1 {
			t.Fatalf("%d hold rows, want 1", n)
		}

		calls.Store(-1000) // every insert from here on fails
		s2 := newSeat(t, tg.DB, 1)
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			h, err := holds.Acquire(ctx, tx, s2, "user:1", inTable)
			if !errors.As(err, new(retryableErr)) || h != nil {
				t.Errorf("Acquire = %+v, %v; want the injected error", h, err)
			}
			theirs = newSeat(t, tx, 7) // the transaction is still usable
			return nil
		}))
		if n := holdRows(t, tg.DB, s2); n != 0 {
			t.Fatalf("%d hold rows left behind, want 0", n)
		}
		for _, x := range []*seat{mine, theirs} {
			var n int64
			require.NoError(t, tg.DB.Model(&seat{}).Where("id = ?", x.ID).Count(&n).Error)
			if n != 1 {
				t.Fatalf("the caller's row %d is gone", x.ID)
			}
		}
	})
}
