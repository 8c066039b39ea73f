package sqlstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
)

func ExampleNew() {
	var db *gorm.DB // opened with your driver: gorm.Open(postgres.Open(dsn), ...)

	store, err := sqlstore.New(db) // creates lock_leases if it is missing
	if err != nil {
		log.Fatal(err)
	}
	m := lease.NewManager(store)
	err = m.Do(context.Background(), "order-42", func(ctx context.Context) error {
		return nil // ship order 42
	}, lease.TTL(30*time.Second), lease.WaitAtMost(3*time.Second))
	if err != nil {
		log.Print(err)
	}
}

// DDL for a DBA to run, when the application's user may not create tables.
func ExampleCreateTableSQL() {
	ddl, err := sqlstore.CreateTableSQL("postgres", sqlstore.Table("app_leases"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ddl)
	// Then: sqlstore.New(db, sqlstore.Table("app_leases"), sqlstore.CreateTable(false))

	// Output:
	// CREATE TABLE IF NOT EXISTS "app_leases" (lock_name VARCHAR(191) NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL)
}
