package scenario

import (
	"context"

	"gorm.io/gorm"
)

// AdvisoryCounter: the same increments inside advisory.With on one name.
func AdvisoryCounter(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}
