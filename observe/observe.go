// Package observe is lockplugin's event hook: one Observer, set on the
// plugin (lockplugin.WithObserver) or on a lease.Manager
// (lease.WithObserver), is told synchronously, on the goroutine doing the
// work, when a wait starts and ends, a lock is held and released, a lease is
// refreshed or lost, a version check finds a conflict, a transaction is
// retried, and a hold is granted, refused, released, found expired or
// force-released.
//
// With no Observer set nothing is built and nothing is called: the cost is
// one nil check per event site.
//
// Observe runs inside the lock operation it reports (a lease's loss is
// reported while the lease's internal state is locked), so it must return
// quickly, must not block, and must not call back into the lock it reports
// on. Hand the event to a metrics library or a buffered channel; see
// integrations/otellock for an OpenTelemetry adapter.
package observe

import "time"

// Mechanism says which lockplugin mechanism an event comes from.
type Mechanism uint8

// The mechanisms.
const (
	Lease    Mechanism = iota + 1 // package lease (any store)
	Advisory                      // package advisory (session locks)
	Version                       // version columns (root plugin)
	Fence                         // fenced writes (root plugin)
	Retry                         // RetryOnConflict
	Holds                         // package holds
	Claim                         // lockplugin.Claim
)

var mechanismNames = [...]string{"", "lease", "advisory", "version", "fence", "retry", "holds", "claim"}

// String returns the mechanism's lower-case name, e.g. "lease".
func (m Mechanism) String() string {
	if int(m) < len(mechanismNames) {
		return mechanismNames[m]
	}
	return "unknown"
}

// Kind says what happened.
type Kind uint8

// The kinds of event.
const (
	// WaitStarted: an acquisition begins (before its first statement or
	// store call).
	WaitStarted Kind = iota + 1
	// WaitEnded: the acquisition is over; Outcome says how, Duration how
	// long it took. An Acquired outcome is followed by Held.
	WaitEnded
	// Held: the lock is held; Fence is its fencing token where it has one.
	Held
	// Released: the holder released it; Duration is how long it was held.
	Released
	// Refreshed: a lease refresh succeeded.
	Refreshed
	// RefreshFailed: a lease refresh got no answer or an error (the lease
	// may still be held, until its safety deadline); Err says why.
	RefreshFailed
	// Lost: the lease may no longer be held (the store says it is gone,
	// or its safety deadline passed); Err is the cause. Reported once per
	// lease.
	Lost
	// Conflict: a version-guarded (or fenced) write found the row changed;
	// Name is the table.
	Conflict
	// Retried: RetryOnConflict runs its function again; Attempt is the
	// attempt about to start (2 for the first retry), Err the error that
	// ended the previous one.
	Retried
	// HoldGranted: a hold was granted (or an active one given back).
	HoldGranted
	// HoldFull: the resource had no free slot.
	HoldFull
	// HoldReleased: a hold's slot was given back.
	HoldReleased
	// HoldExpired: a read of the holds (Acquire's count, ActiveFor,
	// Available, IsFull) met a hold whose TTL had passed but that was never
	// released. Reported once per hold, whichever process meets it first;
	// Duration is how long it lasted (grant to expiry).
	HoldExpired
	// HoldForceReleased: an operator ended a hold with holds.ForceRelease;
	// its holder's next Release or Extend reports it lost.
	HoldForceReleased
	// Warning: a set-up that works but will hurt (Claim on a table with
	// no index for its condition); Name is the table, Err says what and
	// how to fix it. Reported once per table and pool.
	Warning
)

var kindNames = [...]string{"", "wait_started", "wait_ended", "held", "released", "refreshed",
	"refresh_failed", "lost", "conflict", "retried", "hold_granted", "hold_full", "hold_released",
	"hold_expired", "hold_force_released", "warning"}

// String returns the kind's snake_case name, e.g. "wait_ended".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Outcome is how a wait ended (WaitEnded only).
type Outcome uint8

// The outcomes.
const (
	// Acquired: the lock was taken.
	Acquired Outcome = iota + 1
	// Busy: someone else held it and the call did not wait (a try-once).
	Busy
	// Timeout: someone else held it for the whole wait the call allowed.
	Timeout
	// Error: the call failed (store or database error, ended context,
	// invalid input); Err says why.
	Error
)

var outcomeNames = [...]string{"", "acquired", "busy", "timeout", "error"}

// String returns the outcome's lower-case name, e.g. "busy".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Event is one thing that happened to one lock.
type Event struct {
	Mechanism Mechanism
	Kind      Kind
	// Name is the lock name (lease, advisory), the table (version, fence),
	// or "table/id" of the resource (holds). It can have high cardinality:
	// an adapter exporting metrics should leave it out unless asked.
	Name string
	// Outcome is set on WaitEnded.
	Outcome Outcome
	// Duration is the wait (WaitEnded) or the hold (Released,
	// HoldReleased when known, HoldExpired).
	Duration time.Duration
	// Fence is the lease's fencing token (Held, Released, Lost on leases).
	Fence int64
	// Attempt is the attempt about to start (Retried).
	Attempt int
	// Err is the error of an Error outcome, RefreshFailed, Lost, Conflict
	// and Retried.
	Err error
}

// Observer receives events. See the package documentation for what Observe
// may and may not do.
type Observer interface {
	Observe(Event)
}

// Func adapts a function to Observer.
type Func func(Event)

// Observe calls f(e).
func (f Func) Observe(e Event) { f(e) }
