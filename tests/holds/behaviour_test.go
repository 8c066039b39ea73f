package holds_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/require"
)

// TestExpiry: a hold with a 300 ms TTL counts until it expires, by the
// database clock, and then frees its slot with nobody releasing it.
func TestExpiry(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		ctx := context.Background()
		s := newSeat(t, tg.DB, 1)
		h, err := holds.Acquire(ctx, tg.DB, s, "user:1", holds.TTL(300*time.Millisecond), inTable)
		require.NoError(t, err)
		if h == nil || h.ExpiresAt == nil || h.ExpiresAt.Sub(h.CreatedAt) != 300*time.Millisecond {
			t.Fatalf("hold = %+v, want one expiring 300ms after it was created", h)
		}
		granted := time.Now()
		if other, err := holds.Acquire(ctx, tg.DB, s, "user:2", inTable); !errors.Is(err, holds.ErrFull) || !errors.Is(err, lockplugin.ErrBusy) || other != nil {
			t.Fatalf("second holder before expiry: %+v, %v; want nil, ErrFull (and ErrBusy)", other, err)
		}
		// Expiry has nothing to signal: poll, bounded.
		deadline := time.Now().Add(5 * time.Second)
		for {
			n, err := holds.Available(ctx, tg.DB, s, inTable)
			require.NoError(t, err)
			if n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the expired hold still counts after 5s")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if waited := time.Since(granted); waited < 200*time.Millisecond {
			t.Fatalf("the slot came free after %v, before the 300ms TTL", waited)
		}
		if got, err := holds.ActiveFor(ctx, tg.DB, s, "user:1", inTable); err != nil || got != nil {
			t.Fatalf("ActiveFor after expiry = %+v, %v; want nil", got, err)
		}
		other, err := holds.Acquire(ctx, tg.DB, s, "user:2", inTable)
		if err != nil || other == nil {
			t.Fatalf("second holder after expiry: %+v, %v; want a hold", other, err)
		}
		if err := holds.Extend(ctx, tg.DB, h, time.Minute); !errors.Is(err, holds.ErrNotActive) || !errors.Is(err, holds.ErrLost) {
			t.Fatalf("extending the expired hold: %v, want ErrLost and ErrNotActive", err)
		}
		if err := h.Release(ctx); !errors.Is(err, holds.ErrLost) || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("releasing the expired hold: %v, want ErrLost saying it expired", err)
		}
	})
}

// TestReleaseFreesSlot: Release gives the slot back, releasing twice is
// fine, and a released hold cannot be extended.
func TestReleaseFreesSlot(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		ctx := context.Background()
		s := newSeat(t, tg.DB, 1)
		h, err := holds.Acquire(ctx, tg.DB, s, "user:1", inTable)
		require.NoError(t, err)
		if full, err := holds.IsFull(ctx, tg.DB, s, inTable); err != nil || !full {
			t.Fatalf("IsFull with the one slot held = %v, %v", full, err)
		}
		require.NoError(t, h.Release(ctx))
		if h.ReleasedAt == nil {
			t.Fatal("ReleasedAt not set")
		}
		first := *h.ReleasedAt
		require.NoError(t, h.Release(ctx)) // this handle's second release: a no-op
		require.NoError(t, holds.Release(ctx, tg.DB, h))
		if !h.ReleasedAt.Equal(first) {
			t.Fatalf("second release moved ReleasedAt from %v to %v", first, *h.ReleasedAt)
		}
		if n, err := holds.Available(ctx, tg.DB, s, inTable); err != nil || n != 1 {
			t.Fatalf("Available after release = %d, %v; want 1", n, err)
		}
		if err := holds.Extend(ctx, tg.DB, h, time.Minute); !errors.Is(err, holds.ErrNotActive) {
			t.Fatalf("extending a released hold: %v, want ErrNotActive", err)
		}
		other, err := holds.Acquire(ctx, tg.DB, s, "user:2", inTable)
		if err != nil || other == nil || other.ID == h.ID {
			t.Fatalf("after release: %+v, %v; want a new hold", other, err)
		}
		if err := holds.Release(ctx, tg.DB, &holds.Hold{ID: other.ID + 1000}, inTable); !errors.Is(err, holds.ErrNotFound) {
			t.Fatalf("releasing a hold that does not exist: %v", err)
		}
	})
}

// TestSameHolderSameHold: a holder that asks twice gets its hold back, not a
// second slot.
func TestSameHolderSameHold(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		ctx := context.Background()
		s := newSeat(t, tg.DB, 2)
		a, err := holds.Acquire(ctx, tg.DB, s, "user:1", inTable)
		require.NoError(t, err)
		b, err := holds.Acquire(ctx, tg.DB, s, "user:1", inTable)
		require.NoError(t, err)
		if a == nil || b == nil || a.ID != b.ID {
			t.Fatalf("same holder twice: %+v and %+v; want the same hold", a, b)
		}
		if n, err := holds.Available(ctx, tg.DB, s, inTable); err != nil || n != 1 {
			t.Fatalf("Available = %d, %v; want 1", n, err)
		}
		// Holders compare exactly, on MySQL/MariaDB too.
		c, err := holds.Acquire(ctx, tg.DB, s, "USER:1", inTable)
		require.NoError(t, err)
		if c == nil || c.ID == a.ID {
			t.Fatalf("holder USER:1 got %+v; want its own hold", c)
		}
		got, err := holds.ActiveFor(ctx, tg.DB, s, "user:1", inTable)
		require.NoError(t, err)
		if got == nil || got.ID != a.ID || got.Holder != "user:1" || got.ResourceType != seatsTable {
			t.Fatalf("ActiveFor = %+v, want hold %d", got, a.ID)
		}
	})
}

// TestExtend moves a live hold's expiry by the database clock, and removes
// it with a zero TTL.
func TestExtend(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		ctx := context.Background()
		s := newSeat(t, tg.DB, 1)
		h, err := holds.Acquire(ctx, tg.DB, s, "user:1", holds.TTL(time.Second), inTable)
		require.NoError(t, err)
		old := *h.ExpiresAt
		require.NoError(t, holds.Extend(ctx, tg.DB, h, time.Hour))
		if h.ExpiresAt == nil || h.ExpiresAt.Sub(old) < 59*time.Minute {
			t.Fatalf("ExpiresAt after Extend(1h) = %v, was %v", h.ExpiresAt, old)
		}
		require.NoError(t, holds.Extend(ctx, tg.DB, h, 0))
		if h.ExpiresAt != nil {
			t.Fatalf("ExpiresAt after Extend(0) = %v, want none", h.ExpiresAt)
		}
		require.NoError(t, holds.Extend(ctx, tg.DB, h, 0)) // unchanged row: still fine on MySQL
		if err := holds.Extend(ctx, tg.DB, h, -time.Second); !errors.Is(err, holds.ErrInvalid) {
			t.Fatalf("negative TTL: %v, want ErrInvalid", err)
		}
	})
}

// TestLowerCapacity: lowering the capacity below the active count grants
// nothing new and keeps the existing holds. The capacity is read from the
// row under the lock, so a stale in-memory copy cannot oversell.
func TestLowerCapacity(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		ctx := context.Background()
		s := newSeat(t, tg.DB, 3)
		var held []*holds.Hold
		for _, who := range []string{"a", "b", "c"} {
			h, err := holds.Acquire(ctx, tg.DB, s, who, inTable)
			require.NoError(t, err)
			held = append(held, h)
		}
		stale := *s // still says 3
		require.NoError(t, tg.DB.Model(s).Update("capacity", 1).Error)
		require.NoError(t, holds.Release(ctx, tg.DB, held[2]))
		if h, err := holds.Acquire(ctx, tg.DB, &stale, "d", inTable); !errors.Is(err, holds.ErrFull) || h != nil {
			t.Fatalf("acquire over the lowered capacity: %+v, %v; want nil, ErrFull", h, err)
		}
		// IsFull and Available read the capacity where Acquire does: from
		// the row (1), not from the stale struct (3).
		if full, err := holds.IsFull(ctx, tg.DB, &stale, inTable); err != nil || !full {
			t.Fatalf("IsFull with a stale struct saying 3: %v, %v; want true (the row says 1)", full, err)
		}
		if n, err := holds.Available(ctx, tg.DB, &stale, inTable); err != nil || n != 0 {
			t.Fatalf("Available with a stale struct saying 3: %d, %v; want 0", n, err)
		}
		for _, h := range held[:2] {
			again, err := holds.Acquire(ctx, tg.DB, s, h.Holder, inTable)
			if err != nil || again == nil || again.ID != h.ID {
				t.Fatalf("existing holder %s: %+v, %v; want its hold back", h.Holder, again, err)
			}
		}
		if n := activeRows(t, tg.DB, s); n != 2 {
			t.Fatalf("%d active holds, want the 2 kept", n)
		}
	})
}

// TestSoftDeletedResourceStillSerialises: the lock drops GORM's scopes, so a
// soft-deleted resource still has a row to queue on.
func TestSoftDeletedResourceStillSerialises(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		s := newSeat(t, tg.DB, 1)
		require.NoError(t, tg.DB.Delete(s).Error)
		for round := 0; round < 5; round++ {
			if round > 0 {
				require.NoError(t, tg.DB.Table(holdsTable).Where("1 = 1").Delete(nil).Error)
			}
			if granted, rows := race(t, tg.DB, s, 8); granted != 1 || rows != 1 {
				t.Fatalf("round %d: %d holds granted, %d in the table; want 1", round, granted, rows)
			}
		}
	})
}

// TestInCallerTransaction: inside the caller's transaction the hold is
// part of that transaction: it commits and rolls back with it.
func TestInCallerTransaction(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		ctx := context.Background()
		s := newSeat(t, tg.DB, 1)
		var h *holds.Hold
		rollback := errors.New("roll back")
		err := tg.DB.Transaction(func(tx *gorm.DB) error {
			var err error
			h, err = holds.Acquire(ctx, tx, s, "user:1", inTable)
			if err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) || h == nil {
			t.Fatalf("transaction: %v, hold %+v", err, h)
		}
		if n := holdRows(t, tg.DB, s); n != 0 {
			t.Fatalf("%d hold rows after the caller rolled back, want 0", n)
		}
		require.NoError(t, tg.DB.Transaction(func(tx *gorm.DB) error {
			h, err = holds.Acquire(ctx, tx, s, "user:1", inTable)
			return err
		}))
		if h == nil || activeRows(t, tg.DB, s) != 1 {
			t.Fatalf("after commit: hold %+v, %d rows", h, activeRows(t, tg.DB, s))
		}
	})
}
