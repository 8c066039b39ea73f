package scenario

import (
	"context"
	"errors"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/lease"
)

// errNotImplemented marks a scenario whose mechanism has not landed yet.
var errNotImplemented = errors.New("scenario: not implemented yet")

// LostUpdateUnprotected: Workers goroutines each do Rounds read-modify-write
// increments of one counter with plain GORM and no lock. Baseline.
func LostUpdateUnprotected(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}

// LostUpdateForUpdate: the same increments, each reading with FOR UPDATE in
// a transaction.
func LostUpdateForUpdate(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}

// LostUpdateExpr: the same increments as one database-computed UPDATE
// (gorm.Expr("n + 1")).
func LostUpdateExpr(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}

// SkipLockedQueue: Workers goroutines claim Workers*Rounds*10 jobs in
// batches of 10 with FOR UPDATE SKIP LOCKED; every job must be claimed once.
func SkipLockedQueue(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}

// LostUpdateVersion: the same increments through a versioned model and
// lockplugin.RetryOnConflict.
func LostUpdateVersion(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}

// AdvisoryCounter: the same increments inside advisory.With on one name.
func AdvisoryCounter(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}

// LeaseExclusive: Workers goroutines Do one lease name with a wait, Rounds
// times each; never two inside fn at once.
func LeaseExclusive(ctx context.Context, store lease.Store, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}

// CapacityRace: Rounds races of Workers acquirers for a capacity-1
// resource; never more than one hold.
func CapacityRace(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}
