package clauses_test

import (
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/clauses"
)

// A lock limited to one table of a join: FOR UPDATE OF "orders" on
// PostgreSQL, a hint on that table only on SQL Server ([orders] WITH
// (XLOCK, ROWLOCK)), ErrUnsupported where OF cannot be honoured.
// Applications use the same names from the root package
// (lockplugin.ForUpdate, lockplugin.Of).
func ExampleOf() {
	type Order struct {
		ID         uint
		CustomerID uint
	}
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())

	var orders []Order
	tx := db.Session(&gorm.Session{DryRun: true}).Clauses(clauses.ForUpdate(clauses.Of("orders"))).
		Joins("JOIN customers ON customers.id = orders.customer_id").Find(&orders)
	fmt.Println(tx.Statement.SQL.String(), tx.Error)
}

// NOWAIT and SKIP LOCKED answer opposite questions; asking for both is
// ErrInvalidLock before anything is sent, on every database.
func ExampleNoWait() {
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())

	var rows []struct{ ID uint }
	err := db.Table("jobs").Clauses(clauses.ForUpdate(clauses.NoWait, clauses.SkipLocked)).Find(&rows).Error
	fmt.Println(errors.Is(err, lockplugin.ErrInvalidLock))
}
