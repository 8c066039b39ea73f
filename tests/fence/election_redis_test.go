package fence_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// The Redis store is an election Watcher and HolderWatcher.
var (
	_ election.Watcher       = (*redisstore.Store)(nil)
	_ election.HolderWatcher = (*redisstore.Store)(nil)
)

// pollingOnly is a store with a holder read but without the watches: the
// baseline a Watcher store is compared with.
type pollingOnly struct {
	lease.Store
	h election.Holder
}

func (p pollingOnly) Holder(ctx context.Context, name string) (int64, bool, error) {
	return p.h.Holder(ctx, name)
}

// ownRedisStore returns a Redis store on a client of addr (a server of
// the test's own), closed when the test ends.
func ownRedisStore(t *testing.T, c redis.UniversalClient) *redisstore.Store {
	t.Helper()
	t.Cleanup(func() { _ = c.Close() })
	return redisstore.New(c, redisstore.Prefix("i25-watch:"))
}

// TestI25RedisWatches: on Redis (a server of the test's own), Campaign and
// Observe follow the store's subscription, not only their poll: with a
// 5 s PollInterval and TTL, 5 terms change hands (a resigns, b,
// campaigning, takes over) and each takeover and observation must come
// well before a poll would (counted against 1 s; the times logged). The
// same rounds on the same Redis through a store that hides the watches
// (polling only) are the baseline: they wait for the poll.
func TestI25RedisWatches(t *testing.T) {
	srv := servers.StartRedis(t)
	store := ownRedisStore(t, redis.NewClient(&redis.Options{Addr: srv.Addr}))
	opts := []election.Option{election.TTL(5 * time.Second), election.PollInterval(5 * time.Second)}
	name := testdb.Unique(t, "i25_watch")
	const rounds = 5
	camp, obs := takeovers(t, store, store, name, rounds, opts...)
	base := pollingOnly{store, store}
	bcamp, bobs := takeovers(t, base, base, name+"-base", 2, opts...)
	t.Logf("Redis, PollInterval 5 s: Campaign took over after %v (%d of %d within 1 s), Observe delivered after %v (%d of %d within 1 s); polling only (baseline): %v and %v",
		roundMs(camp), within(camp, time.Second), rounds, roundMs(obs), within(obs, time.Second), rounds, roundMs(bcamp), roundMs(bobs))
	want(t, within(camp, time.Second) == rounds && within(obs, time.Second) == rounds, "with the subscription, takeovers and observations must not wait for the 5 s poll")
	want(t, within(bcamp, time.Second) < 2, "the baseline (no watch) took over within 1 s every time: the test does not tell the watch from a poll")
}

// TestI25RedisWatchExpiry: a leader that dies without releasing (a lease
// taken directly with a 1 s TTL and never refreshed) publishes nothing;
// a candidate campaigning with a 5 s PollInterval must still lead within
// 1 s + 500 ms of the lease's start, by the watch's expiry timer, not at
// its poll (3 rounds; the times logged).
func TestI25RedisWatchExpiry(t *testing.T) {
	srv := servers.StartRedis(t)
	store := ownRedisStore(t, redis.NewClient(&redis.Options{Addr: srv.Addr}))
	ctx := context.Background()
	const rounds = 3
	var took []time.Duration
	for i := range rounds {
		name := testdb.Unique(t, fmt.Sprintf("i25_expiry_%d", i))
		// The dead leader, from the candidate's start: the candidate
		// watches a lease whose expiry it learns from PTTL.
		start := time.Now()
		_, ok, err := store.Acquire(ctx, name, "dead-leader", time.Second)
		noErr(t, err)
		want(t, ok, "the dead leader's lease was not granted")
		e, err := election.New(store, name, election.TTL(5*time.Second), election.PollInterval(5*time.Second))
		noErr(t, err)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		term, err := e.Campaign(cctx)
		cancel()
		noErr(t, err)
		took = append(took, time.Since(start))
		noErr(t, term.Resign(ctx))
	}
	t.Logf("Redis, a 1 s lease never refreshed, PollInterval 5 s: the candidate led %v after the lease was taken", roundMs(took))
	want(t, within(took, 1500*time.Millisecond) == rounds, "the candidate must lead at the expiry, not at its poll")
}

// TestI25RedisWatchSignals: what each watch signals. A lease refreshed
// every 300 ms for 3 s (TTL 1 s: the expiry timer runs out and is set
// again twice per second) signals nothing on WatchRelease nor on
// WatchHolder; a grant signals WatchHolder only; a release and a
// ForceRelease signal both. Then the server is killed: both channels
// close (the watch ends, its caller polls).
func TestI25RedisWatchSignals(t *testing.T) {
	srv := servers.StartRedis(t)
	store := ownRedisStore(t, redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1}))
	ctx := context.Background()
	name := testdb.Unique(t, "i25_signals")
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	rel, err := store.WatchRelease(wctx, name)
	noErr(t, err)
	hold, err := store.WatchHolder(wctx, name)
	noErr(t, err)
	// signalled reports whether ch signals within d; a closed channel
	// fails the test.
	signalled := func(ch <-chan struct{}, d time.Duration) bool {
		select {
		case _, ok := <-ch:
			want(t, ok, "the watch ended")
			return true
		case <-time.After(d):
			return false
		}
	}
	_, ok, err := store.Acquire(ctx, name, "o1", time.Second)
	noErr(t, err)
	want(t, ok, "not granted")
	want(t, signalled(hold, 2*time.Second), "WatchHolder: no signal for a grant")
	want(t, !signalled(rel, 100*time.Millisecond), "WatchRelease signalled a grant")
	refreshes := 0
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		ok, err := store.Refresh(ctx, name, "o1", time.Second)
		noErr(t, err)
		want(t, ok, "refresh refused")
		refreshes++
		time.Sleep(300 * time.Millisecond)
	}
	select {
	case <-rel:
		t.Errorf("WatchRelease signalled during %d refreshes", refreshes)
	case <-hold:
		t.Errorf("WatchHolder signalled during %d refreshes", refreshes)
	default:
	}
	ok, err = store.Release(ctx, name, "o1")
	noErr(t, err)
	want(t, ok, "release refused")
	want(t, signalled(rel, 2*time.Second), "WatchRelease: no signal for a release")
	want(t, signalled(hold, 2*time.Second), "WatchHolder: no signal for a release")
	_, ok, err = store.Acquire(ctx, name, "o2", time.Minute)
	noErr(t, err)
	want(t, ok, "not granted")
	want(t, signalled(hold, 2*time.Second), "WatchHolder: no signal for a grant")
	ok, err = store.ForceRelease(ctx, name)
	noErr(t, err)
	want(t, ok, "force-release found nothing")
	want(t, signalled(rel, 2*time.Second), "WatchRelease: no signal for a ForceRelease")
	for len(hold) > 0 {
		<-hold
	}

	srv.Kill()
	for _, ch := range []<-chan struct{}{rel, hold} {
		closed := false
		for deadline := time.After(10 * time.Second); !closed; {
			select {
			case _, ok := <-ch:
				closed = !ok
			case <-deadline:
				t.Fatal("a watch did not end within 10 s of its server's death")
			}
		}
	}
}

// TestI25RedisClusterWatches: the same takeovers on a Redis Cluster of the
// test's own (3 primaries with a replica each): the subscription is on
// the primary of the name's slot, and each takeover comes well before the
// 5 s poll. Then that primary is killed: the watch ends (its channel
// closes) rather than hanging, and after the failover a new watch works
// again.
func TestI25RedisClusterWatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 6-node Redis Cluster")
	}
	cl := servers.StartRedisCluster(t)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	store := ownRedisStore(t, client)
	opts := []election.Option{election.TTL(5 * time.Second), election.PollInterval(5 * time.Second)}
	name := testdb.Unique(t, "i25_cluster_watch")
	const rounds = 3
	camp, obs := takeovers(t, store, store, name, rounds, opts...)
	t.Logf("Redis Cluster, PollInterval 5 s: Campaign took over after %v, Observe delivered after %v", roundMs(camp), roundMs(obs))
	want(t, within(camp, time.Second) == rounds && within(obs, time.Second) == rounds, "with the subscription, takeovers and observations must not wait for the 5 s poll")

	ctx := context.Background()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	rel, err := store.WatchRelease(wctx, name)
	noErr(t, err)
	primary, _, err := cl.PrimaryFor(store.Key(name))
	noErr(t, err)
	primary.Kill()
	select {
	case _, ok := <-rel:
		want(t, !ok, "the watch signalled instead of ending")
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end within 10 s of its primary's death")
	}
	// After the failover (the replica promoted within a few seconds) a
	// new watch signals a release again.
	var rel2 <-chan struct{}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, ok, err := store.Acquire(ctx, name, "after-failover", time.Minute)
		if err == nil && ok {
			rel2, err = store.WatchRelease(wctx, name)
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no acquire and watch within 30 s of the failover: %v", err)
		}
	}
	ok, err := store.Release(ctx, name, "after-failover")
	noErr(t, err)
	want(t, ok, "release refused")
	select {
	case _, ok := <-rel2:
		want(t, ok, "the new watch ended instead of signalling")
	case <-time.After(2 * time.Second):
		t.Fatal("the new watch did not signal the release")
	}
}

// commandCalls reads INFO commandstats from a Redis of the test's own: the
// calls of each command so far. Commands a script runs are counted too
// (as get, set, ...), so clientCalls counts only what clients send.
func commandCalls(t *testing.T, c *redis.Client) map[string]int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	noErr(t, err, "INFO commandstats")
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		cmd, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(cmd, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		noErr(t, err, "parsing", line)
		out[strings.TrimPrefix(cmd, "cmdstat_")] = n
	}
	return out
}

// scriptOnly are the commands the store's clients send only inside its
// scripts (and INFO, the test's own read).
var scriptOnly = map[string]bool{"get": true, "set": true, "pexpire": true, "persist": true, "del": true, "time": true, "publish": true, "exists": true, "info": true}

// clientCalls sums the calls clients sent (not the scripts' own).
func clientCalls(m map[string]int64) int64 {
	var n int64
	for cmd, c := range m {
		if !scriptOnly[cmd] {
			n += c
		}
	}
	return n
}

// TestI25RedisSentinelWatch: an election through Sentinel (a primary, one
// replica, three sentinels of the test's own), TTL and PollInterval 5 s.
// a leads and b campaigns, waiting on its subscription; the primary is
// killed. b's watch ends with the primary's connection (it does not hang
// on a dead server): Campaign polls, then watches again on the promoted
// replica, so that once a resigns after the failover b takes over well
// before the 5 s poll.
func TestI25RedisSentinelWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis primary, a replica and three sentinels")
	}
	p := servers.StartRedisPrimary(t)
	r := servers.StartRedisReplica(t, p.Addr)
	ss := servers.StartSentinels(t, p.Addr, 3, 1)
	store := ownRedisStore(t, redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    servers.SentinelMaster,
		SentinelAddrs: servers.SentinelAddrs(ss),
		DialTimeout:   time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	}))
	ctx := context.Background()
	name := testdb.Unique(t, "i25_sentinel_watch")
	opts := []election.Option{election.TTL(5 * time.Second), election.PollInterval(5 * time.Second)}

	// The watch itself ends with the primary.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	rel, err := store.WatchRelease(wctx, name)
	noErr(t, err)

	a, err := election.New(store, name, opts...)
	noErr(t, err)
	ta, err := a.Campaign(ctx)
	noErr(t, err)
	// The replica has a's lease before the primary goes.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, err := servers.RedisDo(r.Addr, "EXISTS", store.Key(name))
		if err == nil && strings.TrimSpace(out) == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica has not a's lease after 10 s: %q, %v", out, err)
		}
	}
	b, err := election.New(store, name, opts...)
	noErr(t, err)
	won := campaignAsync(t, ctx, b)
	time.Sleep(200 * time.Millisecond) // b is waiting
	p.Kill()
	select {
	case _, ok := <-rel:
		want(t, !ok, "the watch signalled instead of ending")
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end within 10 s of the primary's death")
	}
	if err := servers.WaitPromoted(ss[0].Addr, r.Addr, 30*time.Second); err != nil {
		t.Fatalf("failover: %v", err)
	}
	// b's Campaign polls once after its watch ended (within 5 s) and
	// watches again; a's term survives on the promoted replica or ends.
	time.Sleep(7 * time.Second)
	select {
	case tb := <-won:
		// a's refresh failed across the failover and its lease expired: b
		// took over on its own; nothing more to show.
		t.Logf("b led during the failover (term %d): a's lease did not survive it", tb.Number())
		noErr(t, tb.Resign(ctx))
		return
	default:
	}
	resigned := time.Now()
	noErr(t, ta.Resign(ctx))
	select {
	case tb := <-won:
		took := time.Since(resigned)
		t.Logf("Sentinel, after a failover: b took over %v after a resigned (PollInterval 5 s)", took.Round(100*time.Microsecond))
		want(t, took < time.Second, "b did not watch again after the failover: it took over after %v", took)
		noErr(t, tb.Resign(ctx))
	case <-time.After(15 * time.Second):
		t.Fatal("b never led after a resigned")
	}
}
