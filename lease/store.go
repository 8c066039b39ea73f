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
