package lease

import (
	"context"
	"fmt"
	"time"
)

// HoldAtLeast makes Release keep the name until at least d after the
// acquire was sent, so that a job that finishes fast still excludes the
// same occurrence on nodes whose timers fire a little later (clocks and
// schedulers differ by milliseconds to seconds): each occurrence runs
// once. Choose d larger than the spread of the nodes' start times, and
// shorter than the interval between occurrences.
//
// It needs no store support. At Release, when less than d has passed since
// the acquire was sent, the lease is refreshed to the time left instead of
// released, and the store's own TTL frees it. The clock reasoning: the
// store granted the lease after the acquire was sent and receives the
// refresh after it is sent, so it holds the name until at least (acquire
// sent) + d by this process's clock, with only the two clocks' rate
// difference over d (parts per million) between them; no clock is
// compared with another's time of day. On the local store, which has no
// TTL, Release frees the name from a timer at that instant instead (and
// at once if the process ends). A hold that cannot be refreshed (the
// store erred) returns the error: the lease then lasts until its TTL.
//
// Done closes at Release as usual: the holder's work is over; only other
// acquirers are kept out. Release returns nil once the hold is in place.
func HoldAtLeast(d time.Duration) Option { return func(o *options) { o.hold = d } }

// hold is Release under HoldAtLeast, with left until the hold ends.
func (l *Lease) hold(ctx context.Context, left time.Duration) error {
	if _, local := l.m.store.(*LocalStore); local {
		l.markReleased()
		time.AfterFunc(left, func() {
			ctx, cancel := context.WithTimeout(context.Background(), l.m.callTimeout)
			defer cancel()
			_, _, _ = run(l.m, ctx, time.Now().Add(l.m.callTimeout), func(ctx context.Context) (bool, error) {
				return l.m.store.Release(ctx, l.name, l.owner)
			}, nil)
		})
		return nil
	}
	// Rounded up, and a millisecond more: the table and Redis stores keep
	// expiries in whole milliseconds of their own clock.
	ttl := left.Truncate(time.Millisecond) + 2*time.Millisecond
	ok, err, _ := run(l.m, ctx, time.Now().Add(l.m.callTimeout), func(ctx context.Context) (bool, error) {
		return l.m.store.Refresh(ctx, l.name, l.owner, ttl)
	}, nil)
	if err != nil {
		return fmt.Errorf("lease: holding %q for %v more (HoldAtLeast) instead of releasing: %w; its TTL frees it", l.name, ttl, err)
	}
	l.markReleased()
	if !ok {
		return lostError(l.name, nil)
	}
	return nil
}

func (l *Lease) markReleased() {
	l.state.Lock()
	defer l.state.Unlock()
	l.released = true
	l.stopSafetyTimer()
}
