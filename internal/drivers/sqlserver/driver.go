// Package sqlserver is lockplugin's driver for SQL Server: every statement lockplugin
// sends to SQL Server, one file per statement family (see internal/sqldriver).
package sqlserver

import (
	"strconv"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Driver phrases lockplugin's statements for SQL Server.
type Driver struct{ d dialects.Dialect }

// New returns the driver for d, a SQL Server database.
func New(d dialects.Dialect) *Driver { return &Driver{d: d} }

// Dialect is the database the driver was made for.
func (p *Driver) Dialect() dialects.Dialect { return p.d }

// BindVar is @pn.
func (*Driver) BindVar(n int) string { return "@p" + strconv.Itoa(n) }

// ReusesBindVars is true: @pn may stand for one value wherever it appears.
func (*Driver) ReusesBindVars() bool { return true }

// BigintBindVar is BindVar.
func (p *Driver) BigintBindVar(n int) string { return p.BindVar(n) }

// QuoteIdent quotes with brackets, doubling ].
func (*Driver) QuoteIdent(name string) string { return sqldriver.Quote(name, "[", "]") }

// QuoteTable quotes schema and table.
func (p *Driver) QuoteTable(name string) string { return sqldriver.QuoteParts(name, p.QuoteIdent, nil) }

// NowMillis reads SYSUTCDATETIME().
func (*Driver) NowMillis() string { return "DATEDIFF_BIG(millisecond, '1970-01-01', SYSUTCDATETIME())" }

// SelectFirst is SELECT TOP (n) ...: T-SQL has no LIMIT.
func (*Driver) SelectFirst(cols, from, where string, n int) string {
	return "SELECT TOP (" + strconv.Itoa(n) + ") " + cols + " FROM " + from + " WHERE " + where
}

// LockSQL is the table hint of a feature. ForUpdate is the update lock
// (U): it conflicts with other U and X locks, so readers that all take it
// (holds' resource row) run one at a time. Lock clauses use LockClauseSQL,
// which differs.
func (p *Driver) LockSQL(f dialects.Feature) string {
	if !p.d.Supports(f) {
		return ""
	}
	switch f {
	case dialects.ForUpdate:
		return "UPDLOCK, ROWLOCK"
	case dialects.ForShare:
		return "HOLDLOCK, ROWLOCK"
	case dialects.NoWait:
		return "NOWAIT"
	case dialects.SkipLocked:
		return "READPAST"
	}
	return ""
}

// LockClauseSQL phrases lockplugin's row-lock clauses so that their modes
// conflict as FOR UPDATE and FOR SHARE do on PostgreSQL: an exclusive (X)
// row lock for ForUpdate, which conflicts with every other lock, and a
// shared (S) one held to the end of the transaction for ForShare, which
// conflicts with X and lets other S in. LockSQL's UPDLOCK (U) would not do
// for ForUpdate: U and S are compatible both ways in Microsoft's lock
// compatibility matrix, so a ForShare reader would get in beside it and the
// holder's UPDATE would then wait for it or deadlock (1205). HOLDLOCK would
// not do for ForShare: it is SERIALIZABLE, and takes key-range locks on
// the gaps around the rows too.
func (p *Driver) LockClauseSQL(f dialects.Feature) string {
	if p.d.Supports(f) {
		switch f {
		case dialects.ForUpdate:
			return "XLOCK, ROWLOCK"
		case dialects.ForShare:
			return "REPEATABLEREAD, ROWLOCK"
		}
	}
	return p.LockSQL(f)
}

// LatestRead is "": a plain read at READ COMMITTED sees the latest commit.
func (*Driver) LatestRead() string { return "" }

// LockWaitStyle is WaitSetting: SET LOCK_TIMEOUT.
func (p *Driver) LockWaitStyle() sqldriver.WaitStyle {
	if !p.d.Supports(dialects.LockWait) {
		return sqldriver.WaitUnsupported
	}
	return sqldriver.WaitSetting
}

// LockWaitSQL is "": the wait is bounded by a setting.
func (*Driver) LockWaitSQL(time.Duration) string { return "" }

// Savepoint is SAVE TRANSACTION name.
func (*Driver) Savepoint(name string) string { return "SAVE TRANSACTION " + name }

// RollbackTo is ROLLBACK TRANSACTION name.
func (*Driver) RollbackTo(name string) string { return "ROLLBACK TRANSACTION " + name }

// ReleaseSavepoint is "": SQL Server has no RELEASE; its savepoints end
// with the transaction.
func (*Driver) ReleaseSavepoint(string) string { return "" }
