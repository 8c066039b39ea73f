package lockplugin_test

import (
	"context"
	"errors"
	"log"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/lease"
)

// Ledger is a fenced model: embedding lockplugin.Fence adds the column
// "fence", the fence of the lease its last fenced writer held.
type Ledger struct {
	ID      uint
	Balance int64
	lockplugin.Fence
}

// A lease holder writes under its fence. If it is paused past its TTL and
// another holder takes the lease over and writes the row, this holder's
// late write matches nothing and fails with ErrStaleFence: the
// successor's write stays.
func ExampleWithFence() {
	var db *gorm.DB      // opened with your dialector, then db.Use(lockplugin.New())
	var m *lease.Manager // on any lease store
	ctx := context.Background()

	err := m.Do(ctx, "ledger-7", func(ctx context.Context) error {
		l, _ := lease.FromContext(ctx)
		tx := db.WithContext(lockplugin.WithFence(ctx, l))
		var row Ledger
		if err := tx.First(&row, 7).Error; err != nil {
			return err
		}
		row.Balance += 100
		return tx.Save(&row).Error // UPDATE ... SET ..., fence = 12 WHERE id = 7 AND fence <= 12
	})
	var stale *lockplugin.StaleFenceError
	if errors.As(err, &stale) {
		log.Printf("taken over: the row carries fence %d, ours was %d", stale.Current, stale.Fence)
	}
}

// Fenced fences one statement.
func ExampleFenced() {
	var db *gorm.DB
	var l *lease.Lease // from Manager.Acquire
	row := Ledger{ID: 7, Balance: 0}
	err := db.Clauses(lockplugin.Fenced(l)).Model(&row).Update("balance", 0).Error
	if errors.Is(err, lockplugin.ErrStaleFence) {
		log.Print("the lease was taken over; stop")
	}
}
