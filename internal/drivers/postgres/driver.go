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
type Driver struct{ d dialects.Dialect }

// New returns the driver for d, a PostgreSQL database.
func New(d dialects.Dialect) *Driver { return &Driver{d: d} }

// Dialect is the database the driver was made for.
func (p *Driver) Dialect() dialects.Dialect { return p.d }

// BindVar is $n.
func (*Driver) BindVar(n int) string { return "$" + strconv.Itoa(n) }

// ReusesBindVars is true: $n may stand for one value wherever it appears.
func (*Driver) ReusesBindVars() bool { return true }

// BigintBindVar is CAST($n AS BIGINT): PostgreSQL would infer integer from
// a comparison with 0.
func (p *Driver) BigintBindVar(n int) string { return "CAST(" + p.BindVar(n) + " AS BIGINT)" }

// QuoteIdent quotes with double quotes.
func (*Driver) QuoteIdent(name string) string { return sqldriver.Quote(name, `"`, `"`) }

// QuoteTable quotes schema and table.
func (p *Driver) QuoteTable(name string) string { return sqldriver.QuoteParts(name, p.QuoteIdent, nil) }

// NowMillis reads clock_timestamp(), the time of the statement's
// evaluation, not of the transaction's start.
func (*Driver) NowMillis() string {
	return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
}

// LockSQL is the feature's own keywords.
func (p *Driver) LockSQL(f dialects.Feature) string {
	if !p.d.Supports(f) {
		return ""
	}
	return string(f)
}

// LockClauseSQL is LockSQL.
func (p *Driver) LockClauseSQL(f dialects.Feature) string { return p.LockSQL(f) }

// LatestRead is "": a plain read at READ COMMITTED sees the latest commit.
func (*Driver) LatestRead() string { return "" }

// LockWaitStyle is WaitSetting: SET LOCAL lock_timeout.
func (p *Driver) LockWaitStyle() sqldriver.WaitStyle {
	if !p.d.Supports(dialects.LockWait) {
		return sqldriver.WaitUnsupported
	}
	return sqldriver.WaitSetting
}

// LockWaitSQL is "": the wait is bounded by a setting.
func (*Driver) LockWaitSQL(time.Duration) string { return "" }

// Savepoint is SAVEPOINT name.
func (*Driver) Savepoint(name string) string { return "SAVEPOINT " + name }

// RollbackTo is ROLLBACK TO SAVEPOINT name.
func (*Driver) RollbackTo(name string) string { return "ROLLBACK TO SAVEPOINT " + name }

// ReleaseSavepoint is RELEASE SAVEPOINT name.
func (*Driver) ReleaseSavepoint(name string) string { return "RELEASE SAVEPOINT " + name }
