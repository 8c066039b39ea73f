package lease

import (
	"errors"
	"fmt"
	"time"
)

// DefaultPollInterval is how often a waiting Acquire retries unless
// PollInterval says otherwise.
const DefaultPollInterval = 50 * time.Millisecond

// ManagerOption configures a Manager.
type ManagerOption func(*Manager)

// PollInterval sets how often a waiting Acquire or Do retries a held lease
// (default 50 ms). Each wait is drawn at random between half and one and a
// half times d, so that waiters started together do not retry in lockstep.
// A waiter gets a released lease about d/2 after its release on average.
// d must be positive.
func PollInterval(d time.Duration) ManagerOption {
	return func(m *Manager) {
		if d <= 0 {
			m.err = fmt.Errorf("lease: PollInterval must be positive, got %v", d)
			return
		}
		m.poll = d
	}
}

// Option configures one Acquire or Do.
type Option func(*options)

type options struct {
	wait      time.Duration
	ttl       time.Duration
	keepAlive time.Duration
}

// Wait sets how long Acquire and Do keep retrying while someone else holds
// the lease. 0, the default, fails at once with ErrNotAcquired. The
// context's end also ends the wait.
func Wait(d time.Duration) Option { return func(o *options) { o.wait = d } }

// TTL sets how long the lease lasts unless it is refreshed or released:
// after it, the store lets someone else take it, so a holder that died
// does not block the name forever. 0, the default, means no expiry (a
// dead holder's lease then stays until someone releases it by hand; the
// local store frees it when the process ends whatever the TTL).
func TTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// KeepAlive makes Do refresh the lease to its TTL every interval while fn
// runs. When a refresh fails (the lease was lost or the store did not
// answer), fn's context is cancelled with an ErrLeaseLost cause and Do
// returns ErrLeaseLost. interval must be shorter than the TTL. It applies
// to Do only: a Lease from Acquire is refreshed with Lease.Refresh.
func KeepAlive(interval time.Duration) Option { return func(o *options) { o.keepAlive = interval } }

func buildOptions(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt == nil {
			return o, errors.New("lease: nil Option")
		}
		opt(&o)
	}
	switch {
	case o.wait < 0:
		return o, fmt.Errorf("lease: Wait must not be negative, got %v", o.wait)
	case o.ttl < 0:
		return o, fmt.Errorf("lease: TTL must not be negative, got %v", o.ttl)
	case o.keepAlive < 0:
		return o, fmt.Errorf("lease: KeepAlive interval must not be negative, got %v", o.keepAlive)
	case o.keepAlive > 0 && o.ttl > 0 && o.keepAlive >= o.ttl:
		return o, fmt.Errorf("lease: KeepAlive interval %v must be shorter than the TTL %v", o.keepAlive, o.ttl)
	}
	return o, nil
}
