package lease

import (
	"context"
	"errors"
	"time"

	"github.com/lockplugin/lockplugin/observe"
)

// WithObserver makes the Manager report every acquisition (WaitStarted,
// WaitEnded with its outcome and duration, Held with the fence), refresh
// (Refreshed, RefreshFailed), loss (Lost: the store said the lease was
// gone, or its safety deadline passed; once per lease) and release
// (Released, with how long the lease was held) to o, synchronously. See
// package observe for what o may do. Nil, the default, reports nothing.
func WithObserver(o observe.Observer) ManagerOption {
	return func(mo *managerOptions) { mo.obs = o }
}

// observedAcquire is acquire, reported. Without an Observer it is acquire.
func (m *Manager) observedAcquire(ctx context.Context, name string, o options) (*Lease, error) {
	if m.obs == nil {
		return m.acquire(ctx, name, o)
	}
	m.obs.Observe(observe.Event{Mechanism: observe.Lease, Kind: observe.WaitStarted, Name: name})
	start := time.Now()
	l, err := m.acquire(ctx, name, o)
	end := time.Now() // the wait's end and the hold's start: one clock read
	e := observe.Event{Mechanism: observe.Lease, Kind: observe.WaitEnded, Name: name, Duration: end.Sub(start), Err: err, Outcome: observe.Acquired}
	if err != nil {
		e.Outcome = acquireOutcome(err, o.wait)
	}
	m.obs.Observe(e)
	if err == nil {
		l.heldAt = end
		m.obs.Observe(observe.Event{Mechanism: observe.Lease, Kind: observe.Held, Name: name, Fence: l.fence})
	}
	return l, err
}

// acquireOutcome classifies a failed acquire for WaitEnded. It is a
// function of its own so that the error's target escapes to the heap on
// the failure path only, not on every acquisition.
func acquireOutcome(err error, wait time.Duration) observe.Outcome {
	var na *NotAcquiredError
	switch {
	case errors.As(err, &na) && na.Err == nil && wait == 0:
		return observe.Busy
	case errors.As(err, &na) && na.Err == nil:
		return observe.Timeout
	}
	return observe.Error
}

// observeRefresh reports one refresh's result: nil is Refreshed; a loss
// is reported by lostNow, once; anything else is RefreshFailed.
func (l *Lease) observeRefresh(err *error) {
	o := l.m.obs
	if o == nil || errors.Is(*err, ErrLeaseLost) {
		return
	}
	e := observe.Event{Mechanism: observe.Lease, Kind: observe.Refreshed, Name: l.name, Fence: l.fence}
	if *err != nil {
		e.Kind, e.Err = observe.RefreshFailed, *err
	}
	o.Observe(e)
}

// lostNow ends the lease's context with cause, reporting Lost first when
// it was still live, so that the event comes before Done closes. The
// caller holds l.state.
func (l *Lease) lostNow(cause error) {
	if o := l.m.obs; o != nil && l.cause == nil {
		o.Observe(observe.Event{Mechanism: observe.Lease, Kind: observe.Lost, Name: l.name, Fence: l.fence, Err: cause})
	}
	l.end(cause)
}

// observeRelease reports a release that the store confirmed, or whose
// lease had already been lost (Released with how long it was held, and
// the error, if any, Release returns).
func (l *Lease) observeRelease(err *error) {
	o := l.m.obs
	if o == nil {
		return
	}
	l.state.Lock()
	released := l.released
	l.state.Unlock()
	if !released {
		return // no answer from the store: Release can be called again
	}
	o.Observe(observe.Event{Mechanism: observe.Lease, Kind: observe.Released, Name: l.name, Fence: l.fence, Duration: time.Since(l.heldAt), Err: *err})
}
