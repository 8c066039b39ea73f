package leasetest

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// GrantAll returns a broken Store that grants every Acquire, Release and
// Refresh to everyone, with increasing fences. Run an exclusion test
// against it first: if the test passes here too, it cannot catch overlap.
func GrantAll() lease.Store { return &grantAll{} }

type grantAll struct{ n atomic.Int64 }

func (g *grantAll) Acquire(context.Context, string, string, time.Duration) (int64, bool, error) {
	return g.n.Add(1), true, nil
}

func (g *grantAll) Release(context.Context, string, string) (bool, error) { return true, nil }

func (g *grantAll) Refresh(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}
