package fence_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

type report struct {
	ID    uint `gorm:"primaryKey"`
	Value int64
}

func (report) TableName() string { return "i16_reports" }

// TestI16GuardedTransaction: holder A's lease (table store) is taken over
// by B while A is paused, before A's transaction commits. Unguarded (the
// baseline), A's transaction commits its write over B's. Guarded, Guard
// returns ErrLeaseLost inside the transaction, which rolls back: B's write
// stays. And a transaction guarded while A still holds the lease commits
// before any successor can take the lease: B's acquire, sent after A's
// lease expired, waits until A's transaction ends.
func TestI16GuardedTransaction(t *testing.T) {
	const ttl = 300 * time.Millisecond
	ctx := context.Background()
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if refusedOnTiDB(t, tg) {
			return
		}
		if tg.Is(dialects.SQLServer) {
			t.Skip("Guard is refused on SQL Server until tested there")
		}
		tg.Reset(t, &report{})
		store, err := sqlstore.New(tg.DB, sqlstore.Table(leaseTable))
		noErr(t, err)
		m := lease.NewManager(store)
		// SQLite's transactions take the writer lock at BEGIN here
		// (_txlock=immediate), which would hold B's acquire back: A's
		// transaction begins after the pause there.
		beginFirst := !tg.Is(dialects.SQLite)
		landed := 0
		// Rounds: the unguarded baseline; guarded, A's own deadline has
		// passed (Guard refuses before any SQL); guarded, A's deadline has
		// not passed but the table says the lease expired (the row's expiry
		// is moved into the past: the database's clock is the judge), so
		// only the database's answer stops the commit.
		for round, guarded := range []bool{false, true, true} {
			forced := round == 2
			name := testdb.Unique(t, "i16_guard")
			r := report{Value: 1}
			noErr(t, tg.DB.Create(&r).Error)
			aTTL := ttl
			if forced {
				aTTL = 30 * time.Second
			}
			a, err := m.Acquire(ctx, name, lease.TTL(aTTL))
			noErr(t, err)
			var tx *gorm.DB
			if beginFirst {
				tx = tg.DB.Begin()
				noErr(t, tx.Error)
			}
			if forced {
				noErr(t, tg.Plain.Exec("UPDATE "+leaseTable+" SET expires_at = 1 WHERE lock_name = ?", name).Error)
			} else {
				time.Sleep(ttl + 50*time.Millisecond) // A pauses past its TTL
			}
			b, err := m.Acquire(ctx, name, lease.TTL(10*time.Second))
			noErr(t, err, "B takes over")
			noErr(t, tg.DB.Model(&r).Update("value", 2).Error) // B's write
			if !beginFirst {
				tx = tg.DB.Begin()
				noErr(t, tx.Error)
			}
			noErr(t, tx.Model(&report{ID: r.ID}).Update("value", 3).Error) // A's
			if guarded {
				want(t, forced == (a.Context().Err() == nil), "round %d: A's own deadline", round)
				gerr := store.Guard(tx, a)
				isErr(t, gerr, lease.ErrLeaseLost)
				noErr(t, tx.Rollback().Error)
			} else {
				noErr(t, tx.Commit().Error)
			}
			var got report
			noErr(t, tg.DB.First(&got, r.ID).Error)
			if got.Value == 3 {
				landed++
				want(t, !guarded, "a guarded transaction committed after the takeover")
			}
			noErr(t, b.Release(ctx))
		}
		want(t, landed == 1, "the unguarded baseline must commit over B (landed %d)", landed)
		noErr(t, tg.DB.Exec("DELETE FROM i16_reports").Error)

		// Guarded in time: the successor waits for the commit.
		name := testdb.Unique(t, "i16_guard_wait")
		a, err := m.Acquire(ctx, name, lease.TTL(ttl))
		noErr(t, err)
		tx := tg.DB.Begin()
		noErr(t, tx.Error)
		r := report{Value: 10}
		noErr(t, tx.Create(&r).Error)
		noErr(t, store.Guard(tx, a))
		time.Sleep(ttl + 50*time.Millisecond)
		got := make(chan time.Time, 1)
		go func() {
			b, err := lease.NewManager(store).Acquire(ctx, name, lease.TTL(10*time.Second), lease.WaitAtMost(10*time.Second))
			if err == nil {
				got <- time.Now()
				_ = b.Release(ctx)
			} else {
				t.Errorf("B: %v", err)
				got <- time.Time{}
			}
		}()
		time.Sleep(300 * time.Millisecond)
		committed := time.Now()
		noErr(t, tx.Commit().Error)
		at := <-got
		want(t, at.After(committed), "B took the lease %v before A's guarded commit", committed.Sub(at))
		t.Logf("%s: unguarded stale commits landed 1 of 1, guarded 0 of 2 (one refused by the database's clock); B's acquire waited for the guarded commit (got it %v after)",
			tg.Name, at.Sub(committed).Round(time.Millisecond))
	})
}
