package fence_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore/pgnotify"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestI25TableListenWatches: on the table store with Listen (shared
// PostgreSQL), Campaign and Observe follow the release announcements,
// not only their poll: with a 5 s PollInterval, 5 terms change hands (a
// resigns, b, campaigning, takes over); Campaign must return, and Observe
// deliver the new term, well before a poll would (counted against 1 s;
// the times logged). The baseline, the same without Listen, waits for
// its poll.
func TestI25TableListenWatches(t *testing.T) {
	ctx := context.Background()
	db := testdb.Get(t, testdb.Postgres).DB
	for _, listen := range []bool{true, false} {
		opts := []sqlstore.Option{sqlstore.Table(leaseTable)}
		if listen {
			opts = append(opts, pgnotify.Listen())
		}
		store, err := sqlstore.New(db, opts...)
		noErr(t, err)
		name := testdb.Unique(t, "i25_listen_watch")
		eopts := []election.Option{election.TTL(5 * time.Second), election.PollInterval(5 * time.Second)}
		watcher, err := election.New(store, name, eopts...)
		noErr(t, err)
		octx, stop := context.WithCancel(ctx)
		obs, err := watcher.Observe(octx)
		noErr(t, err)
		<-obs // the first read
		a, err := election.New(store, name, eopts...)
		noErr(t, err)
		term, err := a.Campaign(ctx)
		noErr(t, err)
		rounds := 5
		if !listen {
			rounds = 2
		}
		var observed, campaigned []time.Duration
		obsFast, campFast := 0, 0
		for range rounds {
			b, err := election.New(store, name, eopts...)
			noErr(t, err)
			won := make(chan *election.Term, 1)
			go func() {
				tb, err := b.Campaign(ctx)
				if err != nil {
					t.Error(err)
				}
				won <- tb
			}()
			time.Sleep(300 * time.Millisecond) // b is waiting
			resigned := time.Now()
			noErr(t, term.Resign(ctx))
			next := <-won
			took := time.Since(resigned)
			campaigned = append(campaigned, took.Round(time.Millisecond))
			if took < time.Second {
				campFast++
			}
			deadline := time.After(15 * time.Second)
		wait:
			for {
				select {
				case l := <-obs:
					if l.Err == nil && l.Led && l.Term == next.Number() {
						d := time.Since(resigned)
						observed = append(observed, d.Round(time.Millisecond))
						if d < time.Second {
							obsFast++
						}
						break wait
					}
				case <-deadline:
					t.Fatalf("Observe never delivered term %d", next.Number())
				}
			}
			term = next
		}
		noErr(t, term.Resign(ctx))
		stop()
		t.Logf("table store, Listen %v, PollInterval 5 s: Campaign took over after %v (%d of %d within 1 s); Observe delivered the new term after %v (%d of %d within 1 s)",
			listen, campaigned, campFast, rounds, observed, obsFast, rounds)
		if listen {
			want(t, campFast == rounds && obsFast == rounds, "with Listen, takeovers and observations must not wait for the 5 s poll")
		} else {
			want(t, campFast == 0, "without Listen, %d of %d takeovers within 1 s: the baseline cannot tell", campFast, rounds)
		}
	}
}
