package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

var _ lease.Waiter = (*Store)(nil)

// WaitFree blocks until name may be free, so that a waiting Acquire
// (lease.WaitAtMost) wakes on a release instead of polling every
// PollInterval. It needs Listen (PostgreSQL): it subscribes to the
// store's release announcements, then reads the lease's remaining time,
// and returns nil when the name is not held, when its release is
// announced, or when that time has run out (an expiry announces nothing).
// It returns ctx's error when ctx ends first, and an error when the store
// cannot wait (no Listen, the LISTEN connection failed or was lost):
// lease.Manager then polls, as it does for a store without WaitFree.
//
// A release wakes, in each process, the WaitFree of the name that began
// first (the others would only be refused), and 200 ms later, when others
// still wait there, the store reads the name once and wakes the next if
// nobody took it. Across processes the table cannot queue waiters: one
// waiter of each process tries, and the Acquire that arrives first wins.
// An expiry wakes every waiter.
func (s *Store) WaitFree(ctx context.Context, name string) error {
	if err := s.waitable(ctx, name); err != nil {
		return err
	}
	sub, err := s.notify.subscribe(ctx, name, false)
	if err != nil {
		return err
	}
	defer s.notify.unsubscribe(sub)
	// Subscribed before the read: a release after the read is announced.
	left, err := s.remainingFor(ctx, name)
	if err != nil {
		return err
	}
	if left == 0 {
		return nil
	}
	var expiry <-chan time.Time
	if left > 0 {
		t := time.NewTimer(left + time.Millisecond)
		defer t.Stop()
		expiry = t.C
	}
	select {
	case <-sub.c:
		return nil
	case <-expiry:
		return nil
	case <-sub.run.lost:
		return fmt.Errorf("sqlstore: waiting for %q: the LISTEN connection was lost; polling", name)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WatchRelease implements election.Watcher with Listen (PostgreSQL): a
// signal on the channel says name may be free, because its release was
// announced or its lease has run out (the watch reads the remaining time
// when it starts and again when that time is up, about once per
// refresh of the holder). It returns an error at once without Listen, or
// when the store cannot LISTEN now; the channel is closed when ctx ends or
// the LISTEN connection is lost (election.Campaign then polls, and
// watches again).
func (s *Store) WatchRelease(ctx context.Context, name string) (<-chan struct{}, error) {
	return s.watch(ctx, name, false)
}

// WatchHolder implements election.HolderWatcher with Listen
// (PostgreSQL): as WatchRelease, a signal says name's holder may have
// changed by a release or an expiry, and one more follows the read the
// watch makes 100 ms after a release (by then a waiting candidate has
// usually taken the name). A name taken while free otherwise announces
// nothing: Observe sees the new holder at its next read.
func (s *Store) WatchHolder(ctx context.Context, name string) (<-chan struct{}, error) {
	return s.watch(ctx, name, true)
}

// watchSettle is how long a watch waits after a signal before reading
// the lease again (a released name is usually taken within it), doubled
// while the name stays free, up to watchSettleMax.
const (
	watchSettle    = 100 * time.Millisecond
	watchSettleMax = 5 * time.Second
)

// watch is WatchRelease, and WatchHolder with holder set: a signal after
// the read that follows a release too.
func (s *Store) watch(ctx context.Context, name string, holder bool) (<-chan struct{}, error) {
	if err := s.waitable(ctx, name); err != nil {
		return nil, err
	}
	sub, err := s.notify.subscribe(ctx, name, true)
	if err != nil {
		return nil, err
	}
	left, err := s.remainingFor(ctx, name)
	if err != nil {
		s.notify.unsubscribe(sub)
		return nil, err
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer s.notify.unsubscribe(sub)
		signal := func() {
			select {
			case out <- struct{}{}:
			default:
			}
		}
		t := time.NewTimer(time.Hour)
		defer t.Stop()
		settle := watchSettle
		// arm sets the timer by the remaining time just read: at the
		// expiry, or (free) signal now and read again after settle.
		arm := func(left time.Duration) {
			t.Stop()
			select { // drain a value the timer sent meanwhile (Go < 1.23 timers)
			case <-t.C:
			default:
			}
			switch {
			case left > 0:
				settle = watchSettle
				t.Reset(left + time.Millisecond)
			case left == 0:
				signal()
				t.Reset(settle)
				settle = min(2*settle, watchSettleMax)
			}
			// left < 0: no expiry, only a release ends it
		}
		arm(left)
		released := false // the timer runs for the read after a release
		for {
			select {
			case <-sub.c:
				signal()
				settle = watchSettle
				arm(-1)
				t.Reset(settle)
				released = true
			case <-t.C:
				rctx, cancel := context.WithTimeout(ctx, notifyOpenTimeout)
				left, err := s.remainingFor(rctx, name)
				cancel()
				if err != nil {
					return // the watch ends: Campaign polls and watches again
				}
				if released && holder && left != 0 {
					signal() // the holder after the release
				}
				released = false
				arm(left)
			case <-sub.run.lost:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
