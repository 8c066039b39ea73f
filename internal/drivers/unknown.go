package drivers

import (
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// unknown is the driver of a database lockplugin does not know: every
// family is nil, and the capability matrix refuses every feature before a
// statement could be built. Its phrasing answers as the standard would, for
// error messages and tools.
type unknown struct{ d dialects.Dialect }

func (u unknown) Dialect() dialects.Dialect           { return u.d }
func (unknown) BindVar(int) string                    { return "?" }
func (unknown) ReusesBindVars() bool                  { return false }
func (unknown) BigintBindVar(int) string              { return "?" }
func (unknown) QuoteIdent(name string) string         { return sqldriver.Quote(name, `"`, `"`) }
func (u unknown) QuoteTable(name string) string       { return sqldriver.QuoteParts(name, u.QuoteIdent, nil) }
func (unknown) NowMillis() string                     { return "" }
func (unknown) LockSQL(dialects.Feature) string       { return "" }
func (unknown) LockClauseSQL(dialects.Feature) string { return "" }
func (unknown) LatestRead() string                    { return "" }
func (unknown) Savepoint(name string) string          { return "SAVEPOINT " + name }
func (unknown) RollbackTo(name string) string         { return "ROLLBACK TO SAVEPOINT " + name }
func (unknown) ReleaseSavepoint(name string) string   { return "RELEASE SAVEPOINT " + name }
func (unknown) LockWaitStyle() sqldriver.WaitStyle    { return sqldriver.WaitUnsupported }
func (unknown) LockWaitSQL(time.Duration) string      { return "" }
func (unknown) RowLock() sqldriver.RowLock            { return nil }
func (unknown) Advisory() sqldriver.Advisory          { return nil }
func (unknown) Holds() sqldriver.Holds                { return nil }
func (unknown) LeaseTable() sqldriver.LeaseTable      { return nil }
func (unknown) Claim() sqldriver.Claim                { return nil }
func (unknown) Reread() sqldriver.Reread              { return nil }
