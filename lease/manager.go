package lease

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// MaxNameLength is the longest lock name, in bytes, that Manager accepts.
// Stores keep long names as a hash, so the limit only stops runaway input.
const MaxNameLength = 1024

// storeTimeout bounds the store calls made on a context detached from the
// caller's, which may have ended: Do's release, KeepAlive refreshes of
// leases without a TTL, and the release after a failed acquire.
const storeTimeout = 5 * time.Second

// Manager takes, refreshes and releases leases on one Store. It is safe
// for concurrent use; one Manager per store is enough for a process.
type Manager struct {
	store Store
	poll  time.Duration
	err   error // an invalid ManagerOption, reported by every call
}

// NewManager returns a Manager over store. Invalid options, and a nil
// store, are reported by every Acquire and Do.
func NewManager(store Store, opts ...ManagerOption) *Manager {
	m := &Manager{store: store, poll: DefaultPollInterval}
	for _, opt := range opts {
		if opt == nil {
			m.err = errors.New("lease: nil ManagerOption")
			continue
		}
		opt(m)
	}
	if store == nil {
		m.err = errors.New("lease: NewManager needs a Store, got nil")
	}
	return m
}

// Acquire takes the lease on name, waiting for it as long as the Wait
// option allows. It returns an error that matches ErrNotAcquired when the
// lease stayed held by someone else, and a wrapped store error when the
// store could not answer. After a failed store call it asks the store to
// release the name under the new handle's owner token, in case the store
// took the lease but its answer was lost. The caller must Release the
// returned Lease.
func (m *Manager) Acquire(ctx context.Context, name string, opts ...Option) (*Lease, error) {
	o, err := m.check(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	if o.keepAlive > 0 {
		return nil, errors.New("lease: KeepAlive applies to Do; refresh a Lease from Acquire with Lease.Refresh")
	}
	return m.acquire(ctx, name, o)
}

// Do takes the lease on name, runs fn, and releases the lease, also when
// fn fails or panics. fn's context is ctx, cancelled early when a KeepAlive
// refresh fails. Do returns fn's error; an error that matches
// ErrNotAcquired, without running fn, when someone else held the lease; a
// store error, without running fn, when the store could not answer; and an
// error that matches ErrLeaseLost when the lease was lost while fn ran (a
// KeepAlive refresh failed, or it had expired by the time it was
// released), joined with fn's error if any.
//
// The release runs on a context that survives ctx's cancellation, bounded
// to a few seconds, so a cancelled caller still frees the lease.
func (m *Manager) Do(ctx context.Context, name string, fn func(ctx context.Context) error, opts ...Option) (err error) {
	if fn == nil {
		return errors.New("lease: Do needs a function, got nil")
	}
	o, err := m.check(ctx, name, opts)
	if err != nil {
		return err
	}
	l, err := m.acquire(ctx, name, o)
	if err != nil {
		return err
	}

	fnCtx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	lost := make(chan error, 1)
	if o.keepAlive > 0 {
		go l.keepAlive(ctx, o, stop, cancel, lost)
	} else {
		lost <- nil
	}

	var fnErr error
	defer func() {
		close(stop)
		lostErr := <-lost
		cancel(nil)
		relCtx, relCancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		relErr := l.Release(relCtx)
		relCancel()
		if lostErr != nil {
			// The lease may still be held after a failed refresh; the
			// release above frees it early, and its outcome adds nothing.
			relErr = lostErr
		}
		err = join(relErr, fnErr)
	}()
	fnErr = fn(fnCtx)
	return nil // replaced by the deferred function
}

// keepAlive refreshes l every o.keepAlive until stop closes. On the first
// failed refresh it cancels fn's context and reports why on lost.
func (l *Lease) keepAlive(ctx context.Context, o options, stop <-chan struct{}, cancel context.CancelCauseFunc, lost chan<- error) {
	// A refresh must land before the lease would expire, which is at most
	// TTL minus the interval after the tick.
	timeout := o.ttl - o.keepAlive
	if o.ttl == 0 {
		timeout = storeTimeout
	}
	t := time.NewTicker(o.keepAlive)
	defer t.Stop()
	for {
		select {
		case <-stop:
			lost <- nil
			return
		case <-t.C:
		}
		select {
		case <-stop:
			lost <- nil
			return
		default:
		}
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		err := l.Refresh(rctx, o.ttl)
		rcancel()
		if err != nil {
			if !errors.Is(err, ErrLeaseLost) {
				err = lostError(l.name, err)
			}
			cancel(err)
			lost <- err
			return
		}
	}
}

// check validates everything before any store call.
func (m *Manager) check(ctx context.Context, name string, opts []Option) (options, error) {
	if m == nil {
		return options{}, errors.New("lease: nil Manager")
	}
	if m.err != nil {
		return options{}, m.err
	}
	if ctx == nil {
		return options{}, errors.New("lease: nil context")
	}
	if err := checkName(name); err != nil {
		return options{}, err
	}
	return buildOptions(opts)
}

func checkName(name string) error {
	if name == "" {
		return errors.New("lease: empty lock name")
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("lease: lock name of %d bytes is longer than the %d-byte limit", len(name), MaxNameLength)
	}
	return nil
}

func (m *Manager) acquire(ctx context.Context, name string, o options) (*Lease, error) {
	owner, err := newOwner()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var timer *time.Timer
	for {
		if err := ctx.Err(); err != nil {
			return nil, &NotAcquiredError{Name: name, Waited: time.Since(start), Err: err}
		}
		fence, ok, err := m.store.Acquire(ctx, name, owner, o.ttl)
		if err != nil {
			m.abandon(ctx, name, owner)
			if cerr := ctx.Err(); cerr != nil {
				return nil, &NotAcquiredError{Name: name, Waited: time.Since(start), Err: cerr}
			}
			return nil, fmt.Errorf("lease: acquiring %q: %w", name, err)
		}
		if ok {
			return &Lease{store: m.store, name: name, owner: owner, fence: fence}, nil
		}
		if o.wait == 0 {
			return nil, &NotAcquiredError{Name: name}
		}
		waited := time.Since(start)
		if waited >= o.wait {
			return nil, &NotAcquiredError{Name: name, Waited: waited}
		}
		d := min(m.nextPoll(), o.wait-waited)
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return nil, &NotAcquiredError{Name: name, Waited: time.Since(start), Err: ctx.Err()}
		case <-timer.C:
		}
	}
}

// abandon releases name for owner after an Acquire that failed. The store
// may have taken the lease before the error reached the caller (its reply
// lost to a timeout, a cancelled context or a broken connection); nobody
// else has the owner token, so only this call can free it, and a lease
// without TTL would otherwise stay held by nobody. If it was not taken, the
// release is refused and changes nothing. It runs on a context detached
// from ctx, which may be the very reason the acquire failed.
func (m *Manager) abandon(ctx context.Context, name, owner string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	_, _ = m.store.Release(rctx, name, owner)
}

// nextPoll draws the next retry delay from [poll/2, 3*poll/2).
func (m *Manager) nextPoll() time.Duration {
	return m.poll/2 + rand.N(m.poll)
}

// newOwner returns a fresh owner token: 128 random bits in hex.
func newOwner() (string, error) {
	var b [16]byte
	if _, err := cryptorand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lease: reading random owner token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// join returns the non-nil errors of a and b, joined only when both are.
func join(a, b error) error {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return errors.Join(a, b)
}
