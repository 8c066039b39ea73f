package sqlserver

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// RowLock: not yet moved here (the mechanism still phrases it).
func (*Driver) RowLock() sqldriver.RowLock { return nil }
