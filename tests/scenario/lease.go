package scenario

import (
	"context"

	"github.com/lockplugin/lockplugin/lease"
)

// LeaseExclusive: Workers goroutines Do one lease name with a wait, Rounds
// times each; never two inside fn at once.
func LeaseExclusive(ctx context.Context, store lease.Store, cfg Config) (Result, error) {
	return Result{}, errNotImplemented
}
