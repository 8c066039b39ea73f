package clauses_test

import (
	"fmt"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/clauses"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

// A lock limited to one table of a join: FOR UPDATE OF on PostgreSQL, a
// hint on that table only on SQL Server. Applications use the same names
// from the root package (lockplugin.ForUpdate, lockplugin.Of).
func ExampleOf() {
	type Order struct {
		ID         uint
		CustomerID uint
	}
	for _, name := range []string{"postgres", "sqlserver"} {
		db, _ := dryrun.Open(name, "")
		_ = db.Use(lockplugin.New())

		var orders []Order
		tx := db.Clauses(clauses.ForUpdate(clauses.Of("orders"))).
			Joins("JOIN customers ON customers.id = orders.customer_id").Find(&orders)
		fmt.Println(tx.Statement.SQL.String())
	}
	// Output:
	// SELECT "orders"."id","orders"."customer_id" FROM "orders" JOIN customers ON customers.id = orders.customer_id FOR UPDATE OF "orders"
	// SELECT [orders].[id],[orders].[customer_id] FROM [orders] WITH (XLOCK, ROWLOCK) JOIN customers ON customers.id = orders.customer_id
}

// NOWAIT and SKIP LOCKED answer opposite questions; asking for both is an
// error before anything is sent.
func ExampleNoWait() {
	db, _ := dryrun.Open("postgres", "")
	_ = db.Use(lockplugin.New())

	var rows []struct{ ID uint }
	err := db.Table("jobs").Clauses(clauses.ForUpdate(clauses.NoWait, clauses.SkipLocked)).Find(&rows).Error
	fmt.Println(err)
	// Output:
	// lockplugin: invalid lock: NOWAIT and SKIP LOCKED cannot be combined: the first fails on a locked row, the second skips it
}
