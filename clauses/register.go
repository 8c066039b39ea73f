package clauses

import "gorm.io/gorm"

// Config configures Register.
type Config struct {
	// AllowOutsideTransaction turns off the ErrNotInTransaction check.
	AllowOutsideTransaction bool
}

// Register installs the lock clause callbacks and builders on db. The root
// lockplugin plugin calls it; applications use lockplugin.New.
func Register(db *gorm.DB, cfg Config) error {
	return nil // TODO(issue 2)
}
