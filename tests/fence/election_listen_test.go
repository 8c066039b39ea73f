package fence_test

import (
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
	db := testdb.Get(t, testdb.Postgres).DB
	for _, listen := range []bool{true, false} {
		opts := []sqlstore.Option{sqlstore.Table(leaseTable)}
		if listen {
			opts = append(opts, pgnotify.Listen())
		}
		store, err := sqlstore.New(db, opts...)
		noErr(t, err)
		rounds := 5
		if !listen {
			rounds = 2
		}
		campaigned, observed := takeovers(t, store, store, testdb.Unique(t, "i25_listen_watch"), rounds,
			election.TTL(5*time.Second), election.PollInterval(5*time.Second))
		campFast, obsFast := within(campaigned, time.Second), within(observed, time.Second)
		t.Logf("table store, Listen %v, PollInterval 5 s: Campaign took over after %v (%d of %d within 1 s); Observe delivered the new term after %v (%d of %d within 1 s)",
			listen, roundMs(campaigned), campFast, rounds, roundMs(observed), obsFast, rounds)
		if listen {
			want(t, campFast == rounds && obsFast == rounds, "with Listen, takeovers and observations must not wait for the 5 s poll")
		} else {
			want(t, campFast == 0, "without Listen, %d of %d takeovers within 1 s: the baseline cannot tell", campFast, rounds)
		}
	}
}
