package scenario

import (
	"context"

	"gorm.io/gorm"
)

// SkipLockedQueue: Workers goroutines claim Workers*Rounds*10 jobs in
// batches of 10 with FOR UPDATE SKIP LOCKED; every job must be claimed once.
func SkipLockedQueue(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}
