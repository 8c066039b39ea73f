package sqlite

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// Advisory is nil: SQLite has no advisory locks (the capability matrix
// refuses them).
func (*Driver) Advisory() sqldriver.Advisory { return nil }
