package holds_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/require"
)

// TestOtherResourceNotBlocked: while an Acquire on resource A is paused
// inside its own transaction, after locking A's row, counting and inserting
// its hold, an Acquire on resource B (the neighbouring key) returns at once.
// On InnoDB this fails if the count takes gap locks. The same holds for an
// Acquire inside a caller's READ COMMITTED transaction. SQLite has one
// writer per database, so there B waits by design.
func TestOtherResourceNotBlocked(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if tg.Is(dialects.SQLite) {
			t.Skip("SQLite has one writer per database: every acquirer queues")
		}
		setup(t, tg)
		ctx := context.Background()

		t.Run("own transaction", func(t *testing.T) {
			a, b := newSeat(t, tg.DB, 1), newSeat(t, tg.DB, 1)
			paused, hk := hooked(t, tg)
			inserted, proceed := make(chan struct{}), make(chan struct{})
			var once sync.Once
			hk.set(nil, func(q string) error {
				if isHoldInsert(q, holdsTable) {
					once.Do(func() { close(inserted) })
					<-proceed
				}
				return nil
			})
			type result struct {
				h   *holds.Hold
				err error
			}
			done := make(chan result, 1)
			go func() {
				h, err := holds.Acquire(ctx, paused, a, "user:a", inTable)
				done <- result{h, err}
			}()
			defer func() {
				close(proceed)
				if r := <-done; r.err != nil || r.h == nil {
					t.Errorf("the paused acquirer of A: %+v, %v", r.h, r.err)
				}
			}()
			select {
			case <-inserted:
			case r := <-done:
				t.Fatalf("the acquirer of A finished without pausing: %+v, %v", r.h, r.err)
			}
			expectANotB(t, tg, a, b)
		})

		t.Run("caller's READ COMMITTED transaction", func(t *testing.T) {
			a, b := newSeat(t, tg.DB, 1), newSeat(t, tg.DB, 1)
			tx := tg.DB.Begin(&sql.TxOptions{Isolation: sql.LevelReadCommitted})
			require.NoError(t, tx.Error)
			defer tx.Rollback()
			if ha, err := holds.Acquire(ctx, tx, a, "user:a", inTable); err != nil || ha == nil {
				t.Fatalf("acquire A in the open transaction: %+v, %v", ha, err)
			}
			expectANotB(t, tg, a, b)
		})
	})
}

// expectANotB checks that a second acquirer of a waits (its row is locked)
// while an acquirer of b gets a hold at once.
func expectANotB(t *testing.T, tg *testdb.Target, a, b *seat) {
	t.Helper()
	ctx := context.Background()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if h, err := holds.Acquire(short, tg.DB, a, "user:a2", inTable); err == nil {
		t.Fatalf("acquire A while A is locked returned %+v, nil; want to wait until the deadline", h)
	}
	bounded, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	start := time.Now()
	hb, err := holds.Acquire(bounded, tg.DB, b, "user:b", inTable)
	took := time.Since(start)
	if err != nil || hb == nil {
		t.Fatalf("acquire B while A is locked: %+v, %v after %v; want a hold at once", hb, err, took)
	}
	t.Logf("%s: acquire B while A is locked took %v", tg.Name, took)
}

// TestLockingCountBlocksOthersOnInnoDB proves that TestOtherResourceNotBlocked
// can fail: with the rejected design, a locking read of resource A's holds,
// InnoDB's gap locks make an Acquire on resource B wait.
func TestLockingCountBlocksOthersOnInnoDB(t *testing.T) {
	tg := testdb.Get(t, testdb.MySQL)
	setup(t, tg)
	ctx := context.Background()
	a, b := newSeat(t, tg.DB, 1), newSeat(t, tg.DB, 1)
	tx := tg.DB.Begin()
	require.NoError(t, tx.Error)
	defer tx.Rollback()
	var ids []int64
	require.NoError(t, tx.Raw("SELECT id FROM "+holdsTable+" WHERE resource_type = ? AND resource_id = ? AND released_at IS NULL FOR UPDATE",
		seatsTable, fmt.Sprint(a.ID)).Scan(&ids).Error)

	bounded, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	h, err := holds.Acquire(bounded, tg.DB, b, "user:b", inTable)
	if err == nil {
		t.Fatalf("acquire B behind a gap lock on A's holds returned %+v after %v; want it to wait", h, time.Since(start))
	}
	t.Logf("%s: acquire B behind a locking count of A's holds: %v after %v", tg.Name, err, time.Since(start))
}
