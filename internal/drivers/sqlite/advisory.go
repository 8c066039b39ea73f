package sqlite

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// Advisory: not yet moved here (the mechanism still phrases it).
func (*Driver) Advisory() sqldriver.Advisory { return nil }
