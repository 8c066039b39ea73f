package oracle

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// Holds is nil: holds do not run on Oracle, and the capability matrix
// (dialects.CapacityHolds) refuses them before any statement is asked.
func (*Driver) Holds() sqldriver.Holds { return nil }
