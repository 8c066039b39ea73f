package lease

import (
	"sync"
	"sync/atomic"
	"time"
)

// safetyTimer is a lease's safety timer: at the lease's deadline it calls
// the lease's expire, which ends its context and reports the loss to an
// Observer. Every lease with an Observer (or a Context) has one for as long
// as it is held, so the timers are pooled instead of allocated per lease
// (a time.AfterFunc and its method value were two of the allocations of
// an observed acquire and release). A timer goes back to the pool only
// when Stop says its function will not run: no pooled timer can call the
// lease it served before.
type safetyTimer struct {
	timer *time.Timer
	lease atomic.Pointer[Lease] // atomic: read by fire on the timer's goroutine
}

// safetyTimers are the safetyTimers not in use, stopped.
var safetyTimers sync.Pool

// startSafetyTimer returns a timer calling l.expire after d.
func startSafetyTimer(l *Lease, d time.Duration) *safetyTimer {
	st, _ := safetyTimers.Get().(*safetyTimer)
	if st == nil {
		st = &safetyTimer{}
		st.lease.Store(l)
		st.timer = time.AfterFunc(d, st.fire)
		return st
	}
	st.lease.Store(l)
	st.timer.Reset(d)
	return st
}

func (st *safetyTimer) fire() {
	if l := st.lease.Load(); l != nil {
		l.expire()
	}
}

// stopSafetyTimer stops l's timer, if it has one, and gives it back to
// the pool unless its function has started (it then finds l without a
// timer). The caller holds l.state.
func (l *Lease) stopSafetyTimer() {
	st := l.timer
	if st == nil {
		return
	}
	l.timer = nil
	if st.timer.Stop() {
		st.lease.Store(nil)
		safetyTimers.Put(st)
	}
}
