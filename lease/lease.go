package lease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Lease is one holder's handle on a lease, returned by Manager.Acquire
// (and given to Do's fn through FromContext). Its owner token is its own
// (128 random bits), so no other handle, goroutine, process or pod can
// release or refresh it. It is safe for concurrent use.
//
// A Lease keeps its own safety deadline (Expiry): the send time of the
// last acquire or refresh the store confirmed, plus the TTL, minus a
// margin for clock-rate drift between this process and the store and for
// timer lateness (1% of the TTL, at least 100 ms, at most a quarter of the
// TTL). The store cannot have let anyone else in before it, whatever
// happened to later calls and replies. Done closes at that
// deadline at the latest, so work that watches it stops before a
// successor can start, even when the store is partitioned away and no
// store call returns.
type Lease struct {
	m     *Manager
	name  string
	owner string
	fence int64

	mu sync.Mutex // serialises Refresh and Release

	state sync.Mutex // guards the fields below
	// cause is why the lease may no longer be held (lost, expired,
	// released); nil while it may be.
	cause error
	// ctx ends with cause. It and the safety timer that ends it at the
	// deadline are made on the first call of Context or Done (the timer at
	// once with an Observer, which hears of the loss when the deadline
	// passes): a lease nobody watches needs neither, and its deadline is
	// checked at each use instead (ended).
	ctx      context.Context
	cancel   context.CancelCauseFunc
	ttl      time.Duration
	grant    Grant        // the store's last Grant (GrantStore), for its handle
	deadline time.Time    // zero: no expiry
	timer    *safetyTimer // nil: none running
	released bool
	// releaseUnknown: a Release attempt sent before the safety deadline
	// got no answer, so it may have freed the lease; a later Release's
	// "not held" then means it did (guarded by mu, as Release runs).
	releaseUnknown bool

	holdUntil time.Time // HoldAtLeast: Release keeps the name until then (hold.go)
	heldAt    time.Time // when it was acquired, for an Observer (observe.go)
}

// newLease returns the handle of a lease the store granted to a call sent
// at sent, with g.TTL (0: no expiry).
func newLease(m *Manager, name, owner string, g Grant, sent time.Time) *Lease {
	l := &Lease{m: m, name: name, owner: owner, fence: g.Fence, ttl: g.TTL, grant: g}
	l.extend(sent, g.TTL)
	return l
}

// TTL returns the lease's TTL as the store granted it: the one asked for,
// or more when the store rounds TTLs up (etcd grants whole seconds, and
// at least its minimum); 0 for a lease without expiry. Expiry is kept on
// it, and Refresh(ctx, 0) renews to it.
func (l *Lease) TTL() time.Duration {
	if l == nil {
		return 0
	}
	l.state.Lock()
	defer l.state.Unlock()
	return l.ttl
}

// Name returns the lock name ("" for a Lease not returned by Acquire, as
// Owner, Fence, TTL and Expiry return zero values then; its Context has
// ended with an error naming Acquire).
func (l *Lease) Name() string {
	if l == nil {
		return ""
	}
	return l.name
}

// Owner returns the lease's owner token, unique to this handle.
func (l *Lease) Owner() string {
	if l == nil {
		return ""
	}
	return l.owner
}

// Fence returns the fencing token: greater than the token of every earlier
// holder of the name. Pass it to the resource the lease protects, and have
// the resource reject writes carrying a token lower than one it has seen,
// so that a holder paused past its TTL cannot overwrite its successor.
func (l *Lease) Fence() int64 {
	if l == nil {
		return 0
	}
	return l.fence
}

// Expiry returns the lease's safety deadline: until then the lease is
// certainly held (unless released); after it, it may not be. It is the
// send time of the last successful acquire or refresh plus the TTL minus
// the drift margin, and moves with every successful Refresh. It is zero
// for a lease without expiry (NoExpiry).
func (l *Lease) Expiry() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.state.Lock()
	defer l.state.Unlock()
	return l.deadline
}

// Done returns a channel that is closed when the lease may no longer be
// held: at its safety deadline (Expiry) unless refreshed before, when a
// refresh finds it gone, or when it is released. Stop the protected work
// when it closes.
func (l *Lease) Done() <-chan struct{} { return l.Context().Done() }

// Context returns a context that ends when Done closes. context.Cause
// tells why: an error matching ErrLeaseLost (deadline passed, lease gone),
// or a release.
func (l *Lease) Context() context.Context {
	if l == nil || l.m == nil {
		return zeroLeaseCtx
	}
	l.state.Lock()
	defer l.state.Unlock()
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancelCause(context.Background())
		if cause := l.ended(); cause != nil {
			l.cancel(cause)
		} else {
			l.arm()
		}
	}
	return l.ctx
}

// ended returns why the lease may no longer be held, nil while it may:
// the cause recorded, or its safety deadline, checked now (a lease
// without a context has no timer to record it). The caller holds l.state.
func (l *Lease) ended() error {
	if l.cause == nil && !l.deadline.IsZero() && !time.Now().Before(l.deadline) {
		l.lostNow(l.expiredError())
	}
	return l.cause
}

// lostCause is ended, locked.
func (l *Lease) lostCause() error {
	l.state.Lock()
	defer l.state.Unlock()
	return l.ended()
}

// arm sets the safety timer to the deadline, or stops it for a lease
// without expiry; only a lease with a context, or an Observer, has one.
// The caller holds l.state.
func (l *Lease) arm() {
	if l.ctx == nil && l.m.obs == nil {
		return
	}
	if l.deadline.IsZero() {
		l.stopSafetyTimer()
		return
	}
	left := time.Until(l.deadline)
	if l.timer == nil {
		l.timer = startSafetyTimer(l, left)
	} else {
		l.timer.timer.Reset(left)
	}
}

// end records cause as why the lease ended, unless it has ended already,
// and ends its context. The caller holds l.state.
func (l *Lease) end(cause error) {
	if l.cause != nil {
		return
	}
	l.cause = cause
	if l.cancel != nil {
		l.cancel(cause)
	}
}

// extend moves the safety deadline to sent+ttl-margin after a successful
// call sent at sent, and reports whether the lease is still trustworthy:
// false when that deadline has already passed (the answer came too late)
// or the lease was already lost.
func (l *Lease) extend(sent time.Time, ttl time.Duration) bool {
	l.state.Lock()
	defer l.state.Unlock()
	if l.cause != nil {
		return false
	}
	l.ttl = ttl
	if ttl == 0 {
		l.deadline = time.Time{}
		l.arm()
		return true
	}
	l.deadline = sent.Add(ttl - margin(ttl))
	if time.Until(l.deadline) <= 0 {
		l.lostNow(l.expiredError())
		return false
	}
	l.arm()
	return true
}

// expire ends the lease's context when its deadline has passed; a timer
// that fires just after an extend moved the deadline does nothing.
func (l *Lease) expire() {
	l.state.Lock()
	defer l.state.Unlock()
	if l.deadline.IsZero() || l.timer == nil {
		return // no expiry, or released: the timer was stopped as it fired
	}
	if left := time.Until(l.deadline); left > 0 {
		l.timer.timer.Reset(left)
		return
	}
	l.lostNow(l.expiredError())
}

func (l *Lease) expiredError() error {
	return fmt.Errorf("lease: %q: %w: its safety deadline passed without a successful refresh", l.name, ErrLeaseLost)
}

// lose ends the lease's context with cause unless it has ended already.
func (l *Lease) lose(cause error) {
	l.state.Lock()
	defer l.state.Unlock()
	l.lostNow(cause)
}

// currentGrant returns the store's last Grant for the lease.
func (l *Lease) currentGrant() Grant {
	l.state.Lock()
	defer l.state.Unlock()
	return l.grant
}

// ttlNow returns the lease's current TTL and safety deadline.
func (l *Lease) ttlNow() (time.Duration, time.Time) {
	l.state.Lock()
	defer l.state.Unlock()
	return l.ttl, l.deadline
}

// Refresh sets the lease to expire ttl from now; 0 keeps the TTL the lease
// has (the one it was acquired or last refreshed with; NoExpiry leases
// stay without expiry). On success the safety deadline moves to the
// call's send time plus ttl minus the margin.
//
// It returns an error matching ErrLeaseLost when the store says the lease
// is gone, or when Done has already closed (the safety deadline passed:
// someone else may hold it now), and a wrapped store error when the store
// did not answer. The call is bounded by ctx, the safety deadline and the
// Manager's CallTimeout; a failed Refresh can be retried until Expiry.
func (l *Lease) Refresh(ctx context.Context, ttl time.Duration) error {
	if ttl < 0 {
		return fmt.Errorf("lease: Refresh TTL must not be negative, got %v", ttl)
	}
	if l == nil || l.m == nil {
		return errZeroLease
	}
	if ctx == nil {
		return errors.New("lease: nil context")
	}
	return l.refresh(ctx, ttl)
}

func (l *Lease) refresh(ctx context.Context, ttl time.Duration) (err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.observeRefresh(&err)
	cur, deadline := l.ttlNow()
	if ttl == 0 {
		ttl = cur
	}
	l.state.Lock()
	released := l.released
	l.state.Unlock()
	if released {
		return fmt.Errorf("lease: %q: %w: already released", l.name, ErrLeaseLost)
	}
	if cause := l.lostCause(); cause != nil {
		return cause
	}
	sent := time.Now()
	r, err, _ := run(l.m, ctx, earliest(sent.Add(l.m.callTimeout), deadline), func(ctx context.Context) (acquired, error) {
		if gs, ok := l.m.store.(GrantStore); ok {
			g, ok, err := gs.RefreshGrant(ctx, l.name, l.owner, l.currentGrant(), ttl)
			if err == nil && ok {
				g.TTL = grantedTTL(g.TTL, ttl)
			}
			return acquired{g, ok}, err
		}
		ok, err := l.m.store.Refresh(ctx, l.name, l.owner, ttl)
		return acquired{Grant{Fence: l.fence, TTL: ttl}, ok}, err
	}, nil)
	if err != nil {
		return fmt.Errorf("lease: refreshing %q: %w", l.name, err)
	}
	if !r.ok {
		err := lostError(l.name, nil)
		l.lose(err)
		return err
	}
	l.state.Lock()
	l.grant = r.grant
	l.state.Unlock()
	if !l.extend(sent, r.grant.TTL) {
		return l.lostCause()
	}
	return nil
}

// Release frees the lease and closes Done. Releasing again is a no-op.
//
// A release whose reply is lost is retried (with backoff, within ctx and
// the Manager's CallTimeout). When a retry finds the lease not held, and
// an earlier attempt was sent before the safety deadline, that attempt is
// what freed it: Release returns nil, since the work ended while the lease
// was certainly held. Release returns an error matching ErrLeaseLost when
// the lease was gone before Release was sent, or the deadline had passed
// (work done since then was unprotected), and a wrapped store error when
// the store did not answer at all; Release can then be called again, and
// the TTL frees the lease in any case. After Done closed for a lost lease
// (deadline passed, or a refresh found it gone) Release still frees it if
// the store has it, and returns that ErrLeaseLost cause.
func (l *Lease) Release(ctx context.Context) (err error) {
	if l == nil || l.m == nil {
		return errZeroLease
	}
	if ctx == nil {
		return errors.New("lease: nil context")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.state.Lock()
	if l.released {
		l.state.Unlock()
		return nil
	}
	deadline := l.deadline
	var lost error // why the lease was lost before this Release, if it was
	if cause := l.ended(); cause != nil && !errors.Is(cause, errReleased) {
		lost = cause
	}
	l.end(errReleased) // the work is over: Done closes now
	l.state.Unlock()
	err = l.releaseStore(ctx, deadline, lost)
	if l.m.obs != nil {
		l.observeRelease(&err)
	}
	return err
}

// releaseStore is the store phase of Release. It is a function of its own
// so that Release has no defer beyond the open-coded ones: one more pushed
// an unobserved lease cycle 1.4% over the code before observers (callgrind).
func (l *Lease) releaseStore(ctx context.Context, deadline time.Time, lost error) (err error) {
	if lost == nil && !l.holdUntil.IsZero() {
		if left := time.Until(l.holdUntil); left > 0 {
			return l.hold(ctx, left) // HoldAtLeast: hold.go
		}
	}

	now := time.Now()
	bound := now.Add(l.m.callTimeout)
	// An attempt sent before the deadline, by this call or an earlier
	// one that returned an error, may have freed it.
	unknownInTime := l.releaseUnknown
	var lastErr error
	for attempt := 0; ; attempt++ {
		sent := now // the first attempt is sent now: one clock read fewer
		if attempt > 0 {
			sent = time.Now()
		}
		var ok bool
		var err error
		if l.m.inline { // spelled out, not through run: the closure stays on the stack
			ok, err, _ = callInline(ctx, sent, bound, func(ctx context.Context) (bool, error) { return l.storeRelease(ctx) }, nil)
		} else {
			ok, err, _ = call(ctx, bound, func(ctx context.Context) (bool, error) { return l.storeRelease(ctx) }, nil)
		}
		if err == nil {
			l.state.Lock()
			l.released = true
			l.stopSafetyTimer()
			l.state.Unlock()
			switch {
			case lost != nil:
				return lost // held past its safety deadline, or gone
			case ok:
				return nil
			case unknownInTime:
				return nil // an earlier attempt freed it, in time
			}
			return lostError(l.name, nil)
		}
		lastErr = err
		if lost == nil && (deadline.IsZero() || sent.Before(deadline)) {
			unknownInTime = true
			l.releaseUnknown = true
		}
		wait := time.Duration(10<<min(attempt, 4)) * time.Millisecond
		wait = wait/2 + rand.N(wait)
		if ctx.Err() != nil || time.Now().Add(wait).After(bound) {
			return fmt.Errorf("lease: releasing %q: %w", l.name, lastErr)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("lease: releasing %q: %w", l.name, lastErr)
		case <-t.C:
		}
	}
}

// storeRelease is one release of the lease by the store.
func (l *Lease) storeRelease(ctx context.Context) (bool, error) {
	if gs, ok := l.m.store.(GrantStore); ok {
		return gs.ReleaseGrant(ctx, l.name, l.owner, l.currentGrant())
	}
	return l.m.store.Release(ctx, l.name, l.owner)
}

// ctxKey is the key of the Lease in Do's fn context.
type ctxKey struct{}

// FromContext returns the Lease that Do holds for the fn it gave ctx to,
// for its fence, name and expiry.
func FromContext(ctx context.Context) (*Lease, bool) {
	l, ok := ctx.Value(ctxKey{}).(*Lease)
	return l, ok
}
