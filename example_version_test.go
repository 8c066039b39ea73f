package lockplugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
)

// Account is a versioned model: embedding lockplugin.Version adds the
// column "version".
type Account struct {
	ID      uint
	Owner   string
	Balance int
	lockplugin.Version
}

// Two users read the same account; the second save is stale and fails
// instead of silently overwriting the first.
func ExampleVersion() {
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())

	var alice, bob Account
	db.First(&alice, 1) // version 1
	db.First(&bob, 1)   // version 1

	alice.Balance += 10
	if err := db.Save(&alice).Error; err != nil { // UPDATE ... WHERE id = 1 AND version = 1
		log.Fatal(err)
	}
	fmt.Println(alice.Version) // 2

	bob.Balance -= 5
	err := db.Save(&bob).Error // matches no row: version is 2 now
	var stale *lockplugin.ConcurrencyError
	if errors.As(err, &stale) {
		fmt.Printf("%s was read at version %d; the row is at %d\n", stale.Table, stale.Version, stale.Current)
	}
}

// The usual way to live with conflicts: read, change and save inside
// RetryOnConflict, which runs the function again on a conflict.
func ExampleRetryOnConflict() {
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())
	ctx := context.Background()

	err := lockplugin.RetryOnConflict(ctx, db, 5, func(tx *gorm.DB) error {
		var acct Account
		if err := tx.First(&acct, 1).Error; err != nil {
			return err
		}
		acct.Balance += 10
		return tx.Save(&acct).Error
	})
	if errors.Is(err, lockplugin.ErrConcurrency) {
		log.Print("still conflicting after 5 attempts")
	}
}

// An administrator's overwrite: one statement without the guard. The
// version still increments, so other holders of the row see a conflict.
func ExampleSkipVersionCheck() {
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())
	acct := Account{ID: 1, Owner: "ops", Balance: 0}
	if err := db.Clauses(lockplugin.SkipVersionCheck()).Save(&acct).Error; err != nil {
		log.Fatal(err)
	}
}

// A Version is a plain number in JSON, so an API can hand it to a client
// and take it back with the edit.
func ExampleVersion_json() {
	out, _ := json.Marshal(Account{ID: 1, Owner: "ann", Balance: 5, Version: 3})
	fmt.Println(string(out))
	// Output: {"ID":1,"Owner":"ann","Balance":5,"Version":3}
}

// A PATCH handler: the client sends back the version it read, and the
// update happens only if the row is still at that version.
func ExampleVersion_patch() {
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())
	var patch struct {
		Owner   string
		Version lockplugin.Version
	}
	_ = json.Unmarshal([]byte(`{"Owner":"ann","Version":3}`), &patch)

	err := db.Model(&Account{}).Where("id = ?", 1).
		Updates(Account{Owner: patch.Owner, Version: patch.Version}).Error
	if errors.Is(err, lockplugin.ErrConcurrency) {
		log.Print("409 Conflict: the account changed since version 3")
	}
}

// StrictVersion refuses a keyed struct without its version (decoded from a
// request that left it out) instead of overwriting the row unguarded.
func ExampleStrictVersion() {
	var db *gorm.DB // opened with your dialector
	if err := db.Use(lockplugin.New(lockplugin.StrictVersion())); err != nil {
		log.Fatal(err)
	}
	err := db.Save(&Account{ID: 1, Owner: "no version sent"}).Error
	if errors.Is(err, lockplugin.ErrZeroVersion) {
		log.Print("400 Bad Request: send the version you read")
	}
}
