package fence_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/lease"
)

// takeovers runs rounds of: b campaigns, the leader resigns 300 ms
// later, and b's Campaign must return; it returns how long after each
// Resign b led, and whether an Observe (on obsStore) delivered b's term,
// and how long after.
func takeovers(t *testing.T, store, obsStore lease.Store, name string, rounds int, opts ...election.Option) (campaigned, observed []time.Duration) {
	t.Helper()
	ctx := context.Background()
	watcher, err := election.New(obsStore, name, opts...)
	noErr(t, err)
	octx, stop := context.WithCancel(ctx)
	defer stop()
	obs, err := watcher.Observe(octx)
	noErr(t, err)
	<-obs // the first read
	a, err := election.New(store, name, opts...)
	noErr(t, err)
	term, err := a.Campaign(ctx)
	noErr(t, err)
	for range rounds {
		b, err := election.New(store, name, opts...)
		noErr(t, err)
		won := campaignAsync(t, ctx, b)
		time.Sleep(300 * time.Millisecond) // b is waiting
		resigned := time.Now()
		noErr(t, term.Resign(ctx))
		next := <-won
		campaigned = append(campaigned, time.Since(resigned))
		deadline := time.After(15 * time.Second)
	wait:
		for {
			select {
			case l := <-obs:
				if l.Err == nil && l.Led && l.Term == next.Number() {
					observed = append(observed, time.Since(resigned))
					break wait
				}
			case <-deadline:
				t.Fatalf("Observe never delivered term %d", next.Number())
			}
		}
		term = next
	}
	noErr(t, term.Resign(ctx))
	return campaigned, observed
}

// within counts the durations below d.
func within(ds []time.Duration, d time.Duration) int {
	n := 0
	for _, x := range ds {
		if x < d {
			n++
		}
	}
	return n
}

// roundMs rounds durations to 0.1 ms for the log.
func roundMs(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Microsecond)
	}
	return out
}

// campaignAsync runs e.Campaign on a goroutine of its own; the channel
// receives its term (nil after an error, which fails the test).
func campaignAsync(t *testing.T, ctx context.Context, e *election.Elector) <-chan *election.Term {
	won := make(chan *election.Term, 1)
	go func() {
		term, err := e.Campaign(ctx)
		if err != nil {
			t.Error(err)
		}
		won <- term
	}()
	return won
}
