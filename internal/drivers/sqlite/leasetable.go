package sqlite

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// LeaseTable: not yet moved here (the mechanism still phrases it).
func (*Driver) LeaseTable() sqldriver.LeaseTable { return nil }
