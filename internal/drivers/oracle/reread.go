package oracle

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// Reread: not yet moved here (the mechanism still phrases it).
func (*Driver) Reread() sqldriver.Reread { return nil }
