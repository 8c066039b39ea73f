package sqlstore_test

import (
	"context"
	"errors"
	"log"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
)

// A transaction that commits only while its lease is held: Guard, just
// before commit, checks the lease row by the database's clock and locks it
// until the transaction ends.
func ExampleStore_Guard() {
	var db *gorm.DB // the database of the store's table
	store, err := sqlstore.New(db)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	l, err := lease.NewManager(store).Acquire(ctx, "monthly-report")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("UPDATE reports SET done = true WHERE month = ?", "2026-11").Error; err != nil {
			return err
		}
		return store.Guard(tx, l) // lease.ErrLeaseLost: rolled back
	})
	if errors.Is(err, lease.ErrLeaseLost) {
		log.Print("taken over before commit: nothing was written")
	}
}
