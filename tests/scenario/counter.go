package scenario

import (
	"context"

	"gorm.io/gorm"
)

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
