package lease

import (
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
func (m *Manager) observedAcquire(ctxAcquire func() (*Lease, error), name string, o options) (*Lease, error) {
	if m.obs == nil {
		return ctxAcquire()
	}
	m.obs.Observe(observe.Event{Mechanism: observe.Lease, Kind: observe.WaitStarted, Name: name})
	start := time.Now()
	l, err := ctxAcquire()
	e := observe.Event{Mechanism: observe.Lease, Kind: observe.WaitEnded, Name: name, Duration: time.Since(start), Err: err}
	var na *NotAcquiredError
	switch {
	case err == nil:
		e.Outcome = observe.Acquired
	case errors.As(err, &na) && na.Err == nil && o.wait == 0:
		e.Outcome = observe.Busy
	case errors.As(err, &na) && na.Err == nil:
		e.Outcome = observe.Timeout
	default:
		e.Outcome = observe.Error
	}
	m.obs.Observe(e)
	if err == nil {
		l.heldAt = time.Now()
		m.obs.Observe(observe.Event{Mechanism: observe.Lease, Kind: observe.Held, Name: name, Fence: l.fence})
	}
	return l, err
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
