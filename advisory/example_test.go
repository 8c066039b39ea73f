package advisory_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/advisory"
)

// db is opened by the application with its driver, for example
// gorm.Open(postgres.Open(dsn), &gorm.Config{}).
var db *gorm.DB

// Only one server of the fleet runs the nightly job; the others find the
// lock taken and skip it.
func ExampleWith() {
	ctx := context.Background()
	err := advisory.With(ctx, db, "nightly-invoice-run", func(conn *gorm.DB) error {
		// conn runs on the connection that holds the lock.
		return conn.Exec("UPDATE invoices SET state = 'sent' WHERE state = 'due'").Error
	}, advisory.WaitAtMost(0))
	switch {
	case errors.Is(err, advisory.ErrTimeout):
		log.Print("another server is running it")
	case err != nil:
		log.Fatal(err)
	}
}

// Wait at most five seconds for the lock, then give up.
func ExampleWaitAtMost() {
	ctx := context.Background()
	err := advisory.With(ctx, db, "rebuild-search-index", func(conn *gorm.DB) error {
		return conn.Exec("REFRESH MATERIALIZED VIEW search_index").Error
	}, advisory.WaitAtMost(5*time.Second))
	if errors.Is(err, advisory.ErrTimeout) {
		log.Print("still busy after 5s")
	}
}

// A lock whose lifetime does not fit one function: a dispatcher holds it for
// as long as it runs.
func ExampleAcquire() {
	ctx := context.Background()
	l, err := advisory.Acquire(ctx, db, "queue-dispatcher")
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := l.Release(ctx); err != nil {
			log.Print(err)
		}
	}()
	var pending int64
	l.DB().Table("jobs").Where("state = ?", "pending").Count(&pending)
	fmt.Println(pending, "jobs to dispatch")
}

// Behind PgBouncer in transaction mode, take the lock for one transaction.
func ExampleWithTx() {
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := advisory.WithTx(tx, "account-42", advisory.WaitAtMost(2*time.Second)); err != nil {
			return err
		}
		return tx.Exec("UPDATE accounts SET balance = balance - 10 WHERE id = 42").Error
	})
	if err != nil {
		log.Print(err)
	}
}

// PostgreSQL locks take a number; PostgresKey says which, for looking a lock
// up in pg_locks.
func ExamplePostgresKey() {
	key := advisory.PostgresKey("nightly-invoice-run")
	fmt.Println(key)
	fmt.Println("classid", key>>32, "objid", key&0xffffffff)
	// Output:
	// 2353413958986027057
	// classid 547946886 objid 3670986801
}
