package lease

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockplugin/lockplugin/observe"
)

// DefaultPollInterval is how often a waiting Acquire retries unless
// PollInterval says otherwise.
const DefaultPollInterval = 50 * time.Millisecond

// DefaultTTL is the TTL of a lease taken without the TTL or NoExpiry
// option: a holder that crashes blocks the name for at most this long.
const DefaultTTL = 30 * time.Second

// DefaultCallTimeout bounds every single store call unless CallTimeout
// says otherwise. The caller's context, WaitAtMost and a lease's safety deadline
// bound calls further; none of it depends on the store's client honouring
// its context.
const DefaultCallTimeout = 5 * time.Second

// ManagerOption configures a Manager. A nil ManagerOption is ignored; an
// invalid value is returned as an error by every Acquire and Do.
type ManagerOption func(*managerOptions)

type managerOptions struct {
	poll        time.Duration
	callTimeout time.Duration
	obs         observe.Observer // WithObserver: observe.go
	err         error            // the first invalid value
}

// invalid remembers the first invalid option value.
func (o *managerOptions) invalid(err error) {
	if o.err == nil {
		o.err = err
	}
}

// PollInterval sets how often a waiting Acquire or Do retries a held lease
// (default 50 ms). Each wait is drawn at random between half and one and a
// half times d, so that waiters started together do not retry in lockstep.
// A waiter gets a released lease about d/2 after its release on average.
// d must be positive.
func PollInterval(d time.Duration) ManagerOption {
	return func(o *managerOptions) {
		if d <= 0 {
			o.invalid(fmt.Errorf("lease: PollInterval must be positive, got %v", d))
			return
		}
		o.poll = d
	}
}

// CallTimeout sets the longest the Manager waits for any one store call
// (default DefaultCallTimeout, 5 s). A call still running then is
// abandoned: the Manager returns an error matching ErrStoreTimeout and
// the call's eventual result is discarded (an acquire that turns out to
// have succeeded is released). d must be positive.
func CallTimeout(d time.Duration) ManagerOption {
	return func(o *managerOptions) {
		if d <= 0 {
			o.invalid(fmt.Errorf("lease: CallTimeout must be positive, got %v", d))
			return
		}
		o.callTimeout = d
	}
}

// Option configures one Acquire or Do. A nil Option is ignored; an invalid
// value is returned as an error by the call it is passed to.
type Option func(*options)

type options struct {
	wait      time.Duration
	ttl       time.Duration
	keepAlive time.Duration
	ttlSet    bool // TTL or NoExpiry given
	noExpiry  bool
	hold      time.Duration // HoldAtLeast (hold.go)
}

// WaitAtMost sets how long Acquire and Do keep retrying while someone else
// holds the lease: at most d, after which they return an error matching
// ErrNotAcquired (and lockplugin.ErrBusy). Without it, or with
// WaitAtMost(0), they try once and fail at once. WaitAtMost bounds the
// whole call, store calls included: a store that does not answer within
// it gives an error matching ErrStoreTimeout. The context's end also ends
// the wait. A negative d is an error returned by the call.
func WaitAtMost(d time.Duration) Option { return func(o *options) { o.wait = d } }

// Wait is WaitAtMost.
//
// Deprecated: use WaitAtMost, the name every lockplugin mechanism uses for
// its wait.
func Wait(d time.Duration) Option { return WaitAtMost(d) }

// TTL sets how long the lease lasts unless it is refreshed or released:
// after it, the store lets someone else take it, so a holder that died
// does not block the name forever. Without TTL (or NoExpiry) a lease lasts
// DefaultTTL, 30 s, and Do refreshes it with a default KeepAlive. d must
// be positive; a lease without expiry is NoExpiry. (The local store frees
// a lease when its process ends whatever the TTL.)
//
// The holder's own safety deadline follows from the TTL: see Lease.Expiry.
func TTL(d time.Duration) Option {
	return func(o *options) { o.ttl, o.ttlSet, o.noExpiry = d, true, false }
}

// NoExpiry takes a lease that never expires: it lasts until it is
// released. A holder that dies without releasing then blocks the name on
// the table and Redis stores until someone deletes the row or key, and a
// lost reply whose outcome the Manager cannot settle can do the same.
// Prefer a TTL with KeepAlive; NoExpiry is for callers that release by
// other means.
func NoExpiry() Option {
	return func(o *options) { o.ttl, o.ttlSet, o.noExpiry = 0, true, true }
}

// KeepAlive makes Do refresh the lease to its TTL every interval while fn
// runs: at most interval apart, drawn at random from its last quarter (the
// first one sooner, anywhere within the interval), so that many leases
// taken at once refresh at a steady rate, not in one wave per interval. A refresh that fails (the store errs or does not answer) is
// retried with backoff until the lease's safety deadline; fn's context is
// cancelled, with an ErrLeaseLost cause, when the store says the lease is
// gone or the deadline passes, and Do then returns ErrLeaseLost. interval
// must be shorter than the TTL minus the safety margin (see Lease); a
// third of the TTL is a good choice. Do without
// TTL gets KeepAlive(DefaultTTL/3). It applies to Do only: a Lease from
// Acquire is refreshed with Lease.Refresh.
func KeepAlive(interval time.Duration) Option { return func(o *options) { o.keepAlive = interval } }

func buildOptions(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	switch {
	case o.wait < 0:
		return o, fmt.Errorf("lease: WaitAtMost must not be negative, got %v", o.wait)
	case o.ttlSet && !o.noExpiry && o.ttl < 0:
		return o, fmt.Errorf("lease: TTL must not be negative, got %v", o.ttl)
	case o.ttlSet && !o.noExpiry && o.ttl == 0:
		return o, errors.New("lease: TTL must be positive; a lease without expiry is lease.NoExpiry()")
	case o.hold < 0:
		return o, fmt.Errorf("lease: HoldAtLeast must not be negative, got %v", o.hold)
	case o.keepAlive < 0:
		return o, fmt.Errorf("lease: KeepAlive interval must not be negative, got %v", o.keepAlive)
	}
	if !o.ttlSet {
		o.ttl = DefaultTTL
	}
	if o.keepAlive > 0 && !o.noExpiry && o.keepAlive >= o.ttl-margin(o.ttl) {
		// A refresh must be sent before the safety deadline, which is the
		// TTL minus the margin after the previous one was sent.
		return o, fmt.Errorf("lease: KeepAlive interval %v must be shorter than the TTL %v minus its safety margin %v; a third of the TTL is a good choice",
			o.keepAlive, o.ttl, margin(o.ttl))
	}
	return o, nil
}

// margin is how much earlier than TTL after a successful call's send time
// a holder stops trusting its lease: the store measures the TTL on its own
// clock, which may run faster than ours, and this process may be late to
// act on its own timer (GC, CPU contention). 1% of the TTL (clock rates
// differ by parts per million; 1% also covers a virtualised clock's
// slews), at least 100 ms (scheduling delays of a loaded machine), at most
// a quarter of the TTL.
func margin(ttl time.Duration) time.Duration {
	return min(max(ttl/100, 100*time.Millisecond), ttl/4)
}
