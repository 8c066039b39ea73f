// Package sqlite is lockplugin's driver for SQLite: every statement lockplugin
// sends to SQLite, one file per statement family (see internal/sqldriver).
package sqlite

import (
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Driver phrases lockplugin's statements for SQLite.
type Driver struct{ sqldriver.Standard }

// New returns the driver for d, a SQLite database.
func New(d dialects.Dialect) *Driver { return &Driver{sqldriver.Standard{D: d}} }

// BindVar is ?.
func (*Driver) BindVar(int) string { return "?" }

// ReusesBindVars is false: ? has no number.
func (*Driver) ReusesBindVars() bool { return false }

// BigintBindVar is ?.
func (*Driver) BigintBindVar(int) string { return "?" }

// NowMillis reads julianday('now').
func (*Driver) NowMillis() string {
	return "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
}

// LockWaitStyle is WaitUnsupported: SQLite has no row locks to wait for.
func (*Driver) LockWaitStyle() sqldriver.WaitStyle { return sqldriver.WaitUnsupported }

// LockWaitSQL is "".
func (*Driver) LockWaitSQL(time.Duration) string { return "" }
