package holds_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestOtherResourceNotBlocked: while a transaction holds resource A's row
// and an uncommitted hold on A, an Acquire on resource B (the neighbouring
// key) returns at once. On InnoDB this fails if the count takes gap locks.
// SQLite has one writer per database, so there B waits by design.
func TestOtherResourceNotBlocked(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if tg.Is(dialects.SQLite) {
			t.Skip("SQLite has one writer per database: every acquirer queues")
		}
		setup(t, tg)
		ctx := context.Background()
		a, b := newSeat(t, tg.DB, 1), newSeat(t, tg.DB, 1)

		tx := tg.DB.Begin()
		must(t, tx.Error)
		defer tx.Rollback()
		ha, err := holds.Acquire(ctx, tx, a, "user:a", inTable)
		if err != nil || ha == nil {
			t.Fatalf("acquire A in the open transaction: %+v, %v", ha, err)
		}

		// Proof that A really is locked: another acquirer of A waits until
		// its deadline.
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
	})
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
	must(t, tx.Error)
	defer tx.Rollback()
	var ids []int64
	must(t, tx.Raw("SELECT id FROM "+holdsTable+" WHERE resource_type = ? AND resource_id = ? AND released_at IS NULL FOR UPDATE",
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
