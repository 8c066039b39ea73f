package scenario

import (
	"context"

	"gorm.io/gorm"
)

// CapacityRace: Rounds races of Workers acquirers for a capacity-1
// resource; never more than one hold.
func CapacityRace(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}
