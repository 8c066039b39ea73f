package version

import "gorm.io/gorm"

// Register installs the optimistic-locking callbacks on db. The root
// lockplugin plugin calls it; applications use lockplugin.New.
func Register(db *gorm.DB) error {
	return nil // TODO(issue 3)
}
