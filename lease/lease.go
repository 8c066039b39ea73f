package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Lease is one holder's handle on a lease, returned by Manager.Acquire.
// Its owner token is its own (128 random bits), so no other handle,
// goroutine, process or pod can release or refresh it. It is safe for
// concurrent use.
type Lease struct {
	store Store
	name  string
	owner string
	fence int64

	mu       sync.Mutex
	released bool
}

// Name returns the lock name.
func (l *Lease) Name() string { return l.name }

// Owner returns the lease's owner token, unique to this handle.
func (l *Lease) Owner() string { return l.owner }

// Fence returns the fencing token: greater than the token of every earlier
// holder of the name. Pass it to the resource the lease protects, and have
// the resource reject writes carrying a token lower than one it has seen,
// so that a holder paused past its TTL cannot overwrite its successor.
func (l *Lease) Fence() int64 { return l.fence }

// Refresh sets the lease to expire ttl from now (0: never). It returns an
// error matching ErrLeaseLost when the lease expired or was released, and
// a wrapped store error when the store did not answer (the lease may then
// still be held).
func (l *Lease) Refresh(ctx context.Context, ttl time.Duration) error {
	if ttl < 0 {
		return fmt.Errorf("lease: Refresh TTL must not be negative, got %v", ttl)
	}
	if ctx == nil {
		return errors.New("lease: nil context")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return fmt.Errorf("lease: %q: %w: already released", l.name, ErrLeaseLost)
	}
	ok, err := l.store.Refresh(ctx, l.name, l.owner, ttl)
	if err != nil {
		return fmt.Errorf("lease: refreshing %q: %w", l.name, err)
	}
	if !ok {
		return lostError(l.name, nil)
	}
	return nil
}

// Release frees the lease. Releasing again is a no-op. It returns an
// error matching ErrLeaseLost when the lease had already expired (work
// done since then was unprotected), and a wrapped store error when the
// store did not answer; Release can then be retried, and a TTL frees the
// lease in any case.
func (l *Lease) Release(ctx context.Context) error {
	if ctx == nil {
		return errors.New("lease: nil context")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	ok, err := l.store.Release(ctx, l.name, l.owner)
	if err != nil {
		return fmt.Errorf("lease: releasing %q: %w", l.name, err)
	}
	l.released = true
	if !ok {
		return lostError(l.name, nil)
	}
	return nil
}
