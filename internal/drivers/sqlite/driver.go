// Package sqlite is lockplugin's driver for SQLite: every statement lockplugin
// sends to SQLite, one file per statement family (see internal/sqldriver).
package sqlite

import (
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Driver phrases lockplugin's statements for SQLite.
type Driver struct{ d dialects.Dialect }

// New returns the driver for d, a SQLite database.
func New(d dialects.Dialect) *Driver { return &Driver{d: d} }

// Dialect is the database the driver was made for.
func (p *Driver) Dialect() dialects.Dialect { return p.d }

// BindVar is ?.
func (*Driver) BindVar(int) string { return "?" }

// ReusesBindVars is false: ? has no number.
func (*Driver) ReusesBindVars() bool { return false }

// BigintBindVar is ?.
func (*Driver) BigintBindVar(int) string { return "?" }

// QuoteIdent quotes with double quotes.
func (*Driver) QuoteIdent(name string) string { return sqldriver.Quote(name, `"`, `"`) }

// QuoteTable quotes schema and table.
func (p *Driver) QuoteTable(name string) string { return sqldriver.QuoteParts(name, p.QuoteIdent, nil) }

// NowMillis reads julianday('now').
func (*Driver) NowMillis() string {
	return "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
}

// LockSQL is the feature's own keywords where the matrix allows it (it
// allows no row-lock clause: SQLite has none).
func (p *Driver) LockSQL(f dialects.Feature) string {
	if !p.d.Supports(f) {
		return ""
	}
	return string(f)
}

// LockClauseSQL is LockSQL.
func (p *Driver) LockClauseSQL(f dialects.Feature) string { return p.LockSQL(f) }

// LatestRead is "": SQLite has one writer and reads the latest commit.
func (*Driver) LatestRead() string { return "" }

// LockWaitStyle is WaitUnsupported: SQLite has no row locks to wait for.
func (*Driver) LockWaitStyle() sqldriver.WaitStyle { return sqldriver.WaitUnsupported }

// LockWaitSQL is "".
func (*Driver) LockWaitSQL(time.Duration) string { return "" }

// Savepoint is SAVEPOINT name.
func (*Driver) Savepoint(name string) string { return "SAVEPOINT " + name }

// RollbackTo is ROLLBACK TO SAVEPOINT name.
func (*Driver) RollbackTo(name string) string { return "ROLLBACK TO SAVEPOINT " + name }

// ReleaseSavepoint is RELEASE SAVEPOINT name.
func (*Driver) ReleaseSavepoint(name string) string { return "RELEASE SAVEPOINT " + name }
