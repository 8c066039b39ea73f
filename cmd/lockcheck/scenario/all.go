package scenario

import (
	"context"

	"gorm.io/gorm"
)

// Spec is one scenario that runs against a *gorm.DB.
type Spec struct {
	// ID is the short name the lockcheck command's -only flag takes, e.g.
	// "for-update".
	ID string
	// Title names the scenario in reports, e.g. "lost update / FOR UPDATE".
	Title string
	// Run runs the scenario.
	Run func(ctx context.Context, db *gorm.DB, cfg Config) (Result, error)
}

// All lists the scenarios that run against a database, baseline first, in
// the order the lockcheck command shows them. It is the one list both
// lockcheck and its tests take the scenarios from. LeaseExclusive is not in
// it: it runs against a lease.Store, which the caller chooses.
func All() []Spec {
	return []Spec{
		{ID: "unprotected", Title: "lost update / no protection", Run: LostUpdateUnprotected},
		{ID: "for-update", Title: "lost update / FOR UPDATE", Run: LostUpdateForUpdate},
		{ID: "version", Title: "lost update / version + RetryOnConflict", Run: LostUpdateVersion},
		{ID: "expr", Title: "lost update / UPDATE n = n + 1", Run: LostUpdateExpr},
		{ID: "queue-unprotected", Title: "work queue / no lock", Run: QueueUnprotected},
		{ID: "skip-locked", Title: "work queue / SKIP LOCKED", Run: SkipLockedQueue},
		{ID: "capacity", Title: "capacity race / holds", Run: CapacityRace},
		{ID: "advisory", Title: "counter / advisory lock", Run: AdvisoryCounter},
	}
}
