package scenario

import (
	"context"

	"gorm.io/gorm"
)

// LostUpdateVersion: the same increments through a versioned model and
// lockplugin.RetryOnConflict.
func LostUpdateVersion(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}
