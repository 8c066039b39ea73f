// Package postgres is lockplugin's driver for PostgreSQL: every statement lockplugin
// sends to PostgreSQL, one file per statement family (see internal/sqldriver).
package postgres

import (
	"strconv"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Driver phrases lockplugin's statements for PostgreSQL.
type Driver struct{ sqldriver.Standard }

// New returns the driver for d, a PostgreSQL database.
func New(d dialects.Dialect) *Driver { return &Driver{sqldriver.Standard{D: d}} }

// BindVar is $n.
func (*Driver) BindVar(n int) string { return "$" + strconv.Itoa(n) }

// ReusesBindVars is true: $n may stand for one value wherever it appears.
func (*Driver) ReusesBindVars() bool { return true }

// BigintBindVar is CAST($n AS BIGINT): PostgreSQL would infer integer from
// a comparison with 0.
func (p *Driver) BigintBindVar(n int) string { return "CAST(" + p.BindVar(n) + " AS BIGINT)" }

// NowMillis reads clock_timestamp(), the time of the statement's
// evaluation, not of the transaction's start.
func (*Driver) NowMillis() string {
	return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
}

// LockWaitStyle is WaitSetting: SET LOCAL lock_timeout.
func (p *Driver) LockWaitStyle() sqldriver.WaitStyle {
	if !p.D.Supports(dialects.LockWait) {
		return sqldriver.WaitUnsupported
	}
	return sqldriver.WaitSetting
}

// LockWaitSQL is "": the wait is bounded by a setting.
func (*Driver) LockWaitSQL(time.Duration) string { return "" }
