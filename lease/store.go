package lease

import (
	"context"
	"time"
)

// Store keeps leases. Each method is one atomic operation on the store;
// Manager builds waiting, refreshing and handles on top of them. Anyone can
// write a Store; lockplugin's own stores pass the conformance suite in
// lease/leasetest, which a third-party store can run too.
type Store interface {
	// Acquire takes the lease on name for owner when it is free or expired,
	// with ttl (0: no expiry). It returns ok false, and no error, when
	// someone else holds it. A successful Acquire returns a fencing token
	// strictly greater than every token returned before for name.
	Acquire(ctx context.Context, name, owner string, ttl time.Duration) (fence int64, ok bool, err error)
	// Release frees name if owner holds it, and reports whether it did.
	Release(ctx context.Context, name, owner string) (ok bool, err error)
	// Refresh sets the lease's expiry to ttl from now if owner still holds
	// it, and reports whether it did.
	Refresh(ctx context.Context, name, owner string, ttl time.Duration) (ok bool, err error)
}
