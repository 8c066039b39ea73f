package lease

import (
	"context"
	"time"
)

// Store keeps leases. Each method is one atomic operation on the store;
// Manager builds waiting, refreshing, safety deadlines and handles on top
// of them. Anyone can write a Store; lockplugin's own stores pass the
// conformance suite in lease/leasetest, which a third-party store can run
// too.
//
// Every method must be idempotent per owner token, because a reply can be
// lost and the call repeated (by a client library's retry or by Manager):
// a repeated Acquire by the holder gets its lease back, a repeated Release
// answers "not held". Manager bounds every call itself, whatever the
// store's client does with ctx, and may abandon a call that does not
// answer in time; the store must tolerate that (the call's result is then
// discarded, and an Acquire that turns out to have succeeded is released).
type Store interface {
	// Acquire: when name is free or expired, take it for owner with ttl (0:
	// no expiry) and return a fence strictly greater than every fence issued
	// before for name, also across store restarts where the store can be
	// restarted. When name is already held, unexpired, by the SAME owner (a
	// retried acquire whose first reply was lost), return ok=true with the
	// SAME fence and reset its expiry to ttl from now. Otherwise (someone
	// else holds it) return ok=false and a nil error.
	Acquire(ctx context.Context, name, owner string, ttl time.Duration) (fence int64, ok bool, err error)
	// Release frees name if owner holds it and returns ok=true. It returns
	// ok=false and a nil error when owner does not hold it (never held,
	// already released, expired). The Manager, not the store, decides what a
	// not-held answer after a lost reply means.
	Release(ctx context.Context, name, owner string) (ok bool, err error)
	// Refresh sets the lease's expiry to ttl from now (0: no expiry) if
	// owner still holds it, and reports whether it did.
	Refresh(ctx context.Context, name, owner string, ttl time.Duration) (ok bool, err error)
}

// A store may implement the optional interfaces below as well; Manager
// detects them and uses them in place of the three required methods. A
// store that implements none behaves as before.

// Grant is one acquisition as a GrantStore reports it.
type Grant struct {
	// Fence is the lease's fencing token, as Store.Acquire returns it.
	Fence int64
	// TTL is the TTL the store actually granted: at least the one asked
	// for (a store may round it up, never down), 0 for no expiry. Manager
	// keeps its safety deadline, and Lease.TTL, on it.
	TTL time.Duration
	// Handle is the store's own reference to the acquisition (an etcd lease
	// ID, say), handed back to RefreshGrant and ReleaseGrant so that they
	// need not look the lease up again. Manager never reads it.
	Handle any
}

// GrantStore is a Store whose acquisitions carry a handle and the TTL
// really granted. Each method has the contract of its Store counterpart
// (idempotent per owner, ok=false and a nil error when not held), plus the
// Grant. Manager uses AcquireGrant, RefreshGrant and ReleaseGrant for the
// leases it hands out, and Store.Release, without a handle, only to free a
// name after an acquire whose reply was lost.
type GrantStore interface {
	Store
	// AcquireGrant is Acquire returning a Grant; its TTL is at least ttl.
	AcquireGrant(ctx context.Context, name, owner string, ttl time.Duration) (g Grant, ok bool, err error)
	// RefreshGrant is Refresh of the acquisition g (the last Grant that
	// AcquireGrant or RefreshGrant returned for it); on success it returns
	// the Grant to use from now on, with the same Fence and a TTL of at
	// least ttl.
	RefreshGrant(ctx context.Context, name, owner string, g Grant, ttl time.Duration) (Grant, bool, error)
	// ReleaseGrant is Release of the acquisition g.
	ReleaseGrant(ctx context.Context, name, owner string, g Grant) (bool, error)
}

// Waiter is a Store that can block until a held name may have become free
// (released, expired), as a watch does, instead of Manager polling it
// every PollInterval.
type Waiter interface {
	// WaitFree returns nil when name is not held or, after it was held at
	// the call, its holder released it or it expired; it may also return
	// nil early (a spurious wake-up costs one Acquire). It returns an error
	// when ctx ends first, or when it cannot watch (Manager then polls):
	// one matching errors.ErrUnsupported when it cannot in its
	// configuration at all (the table store without Listen).
	WaitFree(ctx context.Context, name string) error
}
