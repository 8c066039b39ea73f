package lockplugin_test

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
)

// A lock limited to one table of a join: FOR UPDATE OF "orders" on
// PostgreSQL and MySQL 8, a hint on that table only on SQL Server
// ([orders] WITH (XLOCK, ROWLOCK)), ErrUnsupported where OF cannot be
// honoured.
func ExampleOf() {
	type Order struct {
		ID         uint
		CustomerID uint
	}
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())

	var orders []Order
	tx := db.Session(&gorm.Session{DryRun: true}).Clauses(lockplugin.ForUpdate(lockplugin.Of("orders"))).
		Joins("JOIN customers ON customers.id = orders.customer_id").Find(&orders)
	fmt.Println(tx.Statement.SQL.String(), tx.Error)
}
