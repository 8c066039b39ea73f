package election

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// Term is one candidate's leadership, from a successful Campaign until
// its lease may no longer be held or it resigns. A zero Term or a nil
// *Term, not returned by Campaign, does not lead: Leading is false, Done
// is closed, Number is 0, and Resign returns an error naming Campaign.
type Term struct {
	e    *Elector
	l    *lease.Lease
	stop context.CancelFunc
	done chan struct{} // closed when the keep-alive has stopped
}

// errZeroTerm answers Resign on a Term not returned by Campaign.
var errZeroTerm = errors.New("election: Term was not returned by Campaign (zero value or nil); take one with Elector.Campaign or TryCampaign")

func (e *Elector) begin(l *lease.Lease) *Term {
	ctx, stop := context.WithCancel(context.Background())
	t := &Term{e: e, l: l, stop: stop, done: make(chan struct{})}
	go t.keepAlive(ctx)
	e.mu.Lock()
	e.cur = t
	e.mu.Unlock()
	return t
}

// keepAlive refreshes the lease every third of the TTL, retrying a failed
// refresh sooner, until the term ends: at the lease's safety deadline
// unless a refresh moved it, when a refresh finds it gone, or on Resign.
func (t *Term) keepAlive(ctx context.Context) {
	defer close(t.done)
	timer := time.NewTimer(t.e.every)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.l.Done():
			return
		case <-timer.C:
		}
		err := t.l.Refresh(ctx, 0)
		switch {
		case err == nil:
			timer.Reset(t.e.every)
		case errors.Is(err, lease.ErrLeaseLost):
			return
		default:
			d := t.e.every / 8
			timer.Reset(d/2 + rand.N(d))
		}
	}
}

// Number returns the term number: the lease's fence, greater than every
// earlier term's.
func (t *Term) Number() int64 { return t.lease().Fence() }

// Fence returns Number, so that a Term fences writes itself:
// db.WithContext(lockplugin.WithFence(ctx, term)).
func (t *Term) Fence() int64 { return t.lease().Fence() }

// Name returns the election's name.
func (t *Term) Name() string { return t.lease().Name() }

// Lease returns the lease behind the term (nil for a Term not returned by
// Campaign).
func (t *Term) Lease() *lease.Lease { return t.lease() }

// lease is t's lease, nil for a zero or nil Term; a nil *lease.Lease
// answers as a lease never held.
func (t *Term) lease() *lease.Lease {
	if t == nil {
		return nil
	}
	return t.l
}

// Done returns a channel closed when the term ends: at the lease's safety
// deadline unless refreshed, when a refresh finds it gone, or on Resign.
// After a process pause it may close late; Leading is exact.
func (t *Term) Done() <-chan struct{} { return t.lease().Done() }

// Context returns a context that ends with the term.
func (t *Term) Context() context.Context { return t.lease().Context() }

// Leading reports whether this term still leads: its lease's safety
// deadline is ahead by this process's clock and the term has not ended.
// Check it right before acting as leader; a false answer is final.
func (t *Term) Leading() bool {
	l := t.lease()
	if l == nil || l.Context().Err() != nil {
		return false
	}
	exp := l.Expiry()
	return exp.IsZero() || time.Now().Before(exp)
}

// Resign ends the term and frees the election for another candidate at
// once. Resigning again is a no-op.
func (t *Term) Resign(ctx context.Context) error {
	if t == nil || t.l == nil || t.stop == nil {
		return errZeroTerm
	}
	t.stop()
	err := t.l.Release(ctx)
	<-t.done
	if errors.Is(err, lease.ErrLeaseLost) {
		return nil // the term had ended already
	}
	return err
}
