package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Queuer is a GrantStore that can queue the waiters for a name in arrival
// order and wake only the next one when the holder leaves, as etcd's
// revision-ordered keys allow. Manager uses it, in place of the
// Acquire-then-WaitFree loop, for an Acquire or Do that may wait
// (WaitAtMost) for a lease with a TTL: waiters then get the name first
// come, first served, and a refused waiter costs the store no write per
// attempt.
type Queuer interface {
	GrantStore
	// AcquireQueued takes name for owner as AcquireGrant does when it is
	// free and nobody waits for it; otherwise it joins name's queue and
	// returns once owner has taken name, ok=true. sent is a time no later
	// than the moment the granted TTL started to run (the Manager keeps
	// the lease's safety deadline from it). When ctx ends first it leaves
	// the queue and returns ok=false with ctx's error. Any error may leave
	// the outcome unknown: Manager then releases name under owner, as
	// after a failed Acquire. ttl is never 0.
	AcquireQueued(ctx context.Context, name, owner string, ttl time.Duration) (g Grant, sent time.Time, ok bool, err error)
}

// queued is one AcquireQueued's answer.
type queued struct {
	grant Grant
	sent  time.Time
	ok    bool
}

// acquireQueued is acquire for a waiting Acquire on a Queuer (or a
// LocalStore, local_queue.go): one store
// call that waits in the store's queue until end (WaitAtMost) or ctx ends.
func (m *Manager) acquireQueued(ctx context.Context, q queueAcquirer, name, owner string, ttl time.Duration, o options, start, end time.Time) (*Lease, error) {
	r, err, _ := call(ctx, end, func(ctx context.Context) (queued, error) {
		g, sent, ok, err := q.AcquireQueued(ctx, name, owner, ttl)
		return queued{g, sent, ok}, err
	}, func(r queued, err error) {
		if r.ok || err != nil {
			m.abandon(name, owner, abandonLimit(time.Now(), ttl), time.Time{}) // the call came back after all
		}
	})
	if err != nil || !r.ok {
		// The store may have taken the lease as the wait ran out: free it
		// under owner, which nobody else has.
		m.abandon(name, owner, abandonLimit(time.Now(), ttl), earliest(end, time.Now().Add(abandonWait)))
		if ctx.Err() != nil || !time.Now().Before(end) || errors.Is(err, context.DeadlineExceeded) {
			return nil, &NotAcquiredError{Name: name, Waited: time.Since(start), Err: ctx.Err()}
		}
		if err == nil {
			err = errors.New("the store answered neither taken nor an error")
		}
		return nil, fmt.Errorf("lease: acquiring %q: %w", name, err)
	}
	r.grant.TTL = grantedTTL(r.grant.TTL, ttl)
	l := newLease(m, name, owner, r.grant, r.sent)
	if o.hold > 0 {
		l.holdUntil = r.sent.Add(o.hold) // HoldAtLeast: hold.go
	}
	if l.lostCause() != nil {
		m.abandon(name, owner, abandonLimit(r.sent, ttl), time.Time{})
		return nil, fmt.Errorf("lease: acquiring %q: %w: the store's answer came after the lease's safety deadline", name, ErrStoreTimeout)
	}
	return l, nil
}
