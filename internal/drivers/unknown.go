package drivers

import (
	"time"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// unknown is the driver of a database lockplugin does not know: every
// family is nil but Reread (the version guard runs on every database, so
// it reads as standard SQL), and the capability matrix refuses every feature before a
// statement could be built (so the standard phrasing's LockSQL is ""). Its
// phrasing answers as the standard would, for error messages and tools.
type unknown struct{ sqldriver.Standard }

func (unknown) BindVar(int) string                 { return "?" }
func (unknown) ReusesBindVars() bool               { return false }
func (unknown) BigintBindVar(int) string           { return "?" }
func (unknown) NowMillis() string                  { return "" }
func (unknown) LockWaitStyle() sqldriver.WaitStyle { return sqldriver.WaitUnsupported }
func (unknown) LockWaitSQL(time.Duration) string   { return "" }
func (unknown) RowLock() sqldriver.RowLock         { return nil }
func (unknown) Advisory() sqldriver.Advisory       { return nil }
func (unknown) Holds() sqldriver.Holds             { return nil }
func (unknown) LeaseTable() sqldriver.LeaseTable   { return nil }
func (unknown) Claim() sqldriver.Claim             { return nil }
func (unknown) Reread() sqldriver.Reread           { return sqldriver.StandardReread{} }
