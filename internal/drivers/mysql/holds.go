package mysql

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// Holds: not yet moved here (the mechanism still phrases it).
func (*Driver) Holds() sqldriver.Holds { return nil }
