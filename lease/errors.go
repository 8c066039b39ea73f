package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockplugin/lockplugin/internal/lockerr"
)

// ErrNotAcquired is matched by errors.Is when a lease could not be taken
// because someone else holds it: the store answered "held" at once
// (without WaitAtMost, or WaitAtMost(0)), or every time until the wait or
// the context ended. It is an ordinary answer, never a failure of the
// store: a store that errs or does not answer gives a wrapped store error
// or ErrStoreTimeout instead. Errors matching it also match
// lockplugin.ErrBusy, the sentinel every mechanism's "someone else has it"
// answer matches.
var ErrNotAcquired = lockerr.Busy("lease: not acquired")

// ErrLeaseLost is matched by errors.Is when a holder no longer holds its
// lease, or can no longer be sure it does: the store said it is gone
// (expired, perhaps taken over), or its safety deadline (Lease.Expiry)
// passed without a successful refresh. Work done since then ran
// unprotected.
var ErrLeaseLost = errors.New("lease: lease lost")

// ErrStoreTimeout is matched by errors.Is when the Manager stopped waiting
// for a store call: the caller's context ended, WaitAtMost ran out, the lease's
// safety deadline came, or CallTimeout passed. The outcome of the call is
// unknown; the Manager settles it (an acquire is released under its owner
// token). When the context ended, the error also matches the context's
// error.
var ErrStoreTimeout = errors.New("lease: the store did not answer in time")

// errReleased is the cause of a Lease's context after Release.
var errReleased = errors.New("lease: released")

// NotAcquiredError says which lock was held and how long the caller waited.
// errors.Is(err, ErrNotAcquired) and errors.Is(err, lockplugin.ErrBusy)
// are true for it.
type NotAcquiredError struct {
	// Name is the lock name.
	Name string
	// Waited is how long the manager kept retrying; 0 without WaitAtMost.
	Waited time.Duration
	// Err is the context's error when the context ended the wait after
	// the store had answered "held", else nil. A context that ends before
	// the store's first answer gives a store error matching
	// ErrStoreTimeout instead: nobody knows that someone else held it.
	Err error
}

// Error names the lock and how long the caller waited.
// errZeroManager and errZeroLease answer every call on a Manager or
// Lease that was not made by NewManager and Acquire.
var (
	errZeroManager = errors.New("lease: Manager has no store (zero value or nil); use lease.NewManager")
	errZeroLease   = errors.New("lease: Lease was not returned by Acquire (zero value or nil); take one with Manager.Acquire")
	errZeroLocal   = errors.New("lease: LocalStore has no directory (zero value or nil); use lease.NewLocalStore")
)

// zeroLeaseCtx is the Context of a zero Lease: already ended, as a lease
// never taken is not held.
var zeroLeaseCtx = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errZeroLease)
	return ctx
}()

func (e *NotAcquiredError) Error() string {
	switch {
	case e == nil:
		return ErrNotAcquired.Error()
	case e.Err != nil:
		return fmt.Sprintf("lease: %q not acquired: gave up waiting after %v: %v", e.Name, e.Waited.Round(time.Millisecond), e.Err)
	case e.Waited > 0:
		return fmt.Sprintf("lease: %q not acquired: still held by another owner after waiting %v", e.Name, e.Waited.Round(time.Millisecond))
	}
	return fmt.Sprintf("lease: %q not acquired: held by another owner", e.Name)
}

// Is makes errors.Is(err, ErrNotAcquired) and errors.Is(err,
// lockplugin.ErrBusy) true.
func (e *NotAcquiredError) Is(target error) bool {
	return target == ErrNotAcquired || target == lockerr.ErrBusy
}

// Unwrap returns the context's error, if the context ended the wait.
func (e *NotAcquiredError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// lostError reports that name's lease was lost, wrapping the cause (a store
// error from a refresh) when there is one.
func lostError(name string, cause error) error {
	if cause != nil {
		return fmt.Errorf("lease: %q: %w: %w", name, ErrLeaseLost, cause)
	}
	return fmt.Errorf("lease: %q: %w: it expired or was taken over", name, ErrLeaseLost)
}
