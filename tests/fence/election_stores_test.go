package fence_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/etcdstore"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/faultproxy"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// electionStore is one store for the election tests: direct is how the
// candidates reach it; proxied (nil when none) goes through proxy, for
// an observer the test cuts off.
type electionStore struct {
	name            string
	direct, proxied lease.Store
	proxy           *faultproxy.Proxy
}

// etcdClientAt returns an etcd client on endpoints, closed when the test
// ends.
func etcdClientAt(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	cl, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	noErr(t, err, "etcd client")
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// electionStores returns the table store (the shared PostgreSQL), the
// Redis store (the shared Redis) and the etcd store (a cluster of the
// test's own), each also behind a fault proxy when withProxy.
func electionStores(t *testing.T, withProxy bool) []electionStore {
	t.Helper()
	tg := testdb.Get(t, testdb.Postgres)
	table := func(db *testdb.Target) lease.Store {
		s, err := sqlstore.New(db.DB, sqlstore.Table(leaseTable))
		noErr(t, err)
		return s
	}
	var out []electionStore

	es := electionStore{name: "table", direct: table(tg)}
	if withProxy {
		cfg, err := pgconn.ParseConfig(tg.DSN)
		noErr(t, err, "parsing the PostgreSQL DSN")
		es.proxy = faultproxy.Start(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
		_, port, _ := net.SplitHostPort(es.proxy.Addr())
		es.proxied = table(testdb.Open(t, testdb.Postgres, func(dsn string) string {
			return dsn + " host=127.0.0.1 port=" + port // later keys win (key=value DSN)
		}))
	}
	out = append(out, es)

	addr := testdb.RedisAddr(t)
	rs := func(a string) lease.Store {
		c := redis.NewClient(&redis.Options{Addr: a, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return redisstore.New(c, redisstore.Prefix(redisPrefix))
	}
	es = electionStore{name: "redis", direct: rs(addr)}
	if withProxy {
		es.proxy = faultproxy.Start(t, addr)
		es.proxied = rs(es.proxy.Addr())
	}
	out = append(out, es)

	cluster := servers.StartEtcdCluster(t)
	prefix := "i24-election/" + redisPrefix
	es = electionStore{name: "etcd", direct: etcdstore.New(etcdClientAt(t, cluster.Endpoints()...), etcdstore.Prefix(prefix))}
	if withProxy {
		es.proxy = faultproxy.Start(t, cluster.Members[0].Addr)
		es.proxied = etcdstore.New(etcdClientAt(t, "http://"+es.proxy.Addr()), etcdstore.Prefix(prefix))
	}
	out = append(out, es)
	return out
}

// leaderView is one answer of Leader or Observe, with the term replaced
// by its place among the terms the candidates won (0: none yet), so that
// stores with different fence numbering can be compared.
type leaderView struct {
	Term int
	Led  bool
}

// TestI24ElectionLeaderObserve: the same election on the table, Redis
// and etcd stores: nobody leads, a leads, a resigns, b leads, b resigns,
// c leads and dies (its lease expires).
// At each step Leader's answer and the value Observe delivers are
// recorded; every store must give the table store's answers (Leader on
// etcd answers term 0 once nobody leads: etcd keeps no record of a
// released lease, which the Holder doc states; Observe keeps the last
// term there).
func TestI24ElectionLeaderObserve(t *testing.T) {
	ctx := context.Background()
	results := map[string][]leaderView{}
	for _, es := range electionStores(t, false) {
		t.Run(es.name, func(t *testing.T) {
			name := testdb.Unique(t, "i24_elect")
			opts := []election.Option{election.TTL(2 * time.Second), election.PollInterval(20 * time.Millisecond)}
			a, err := election.New(es.direct, name, opts...)
			noErr(t, err)
			b, err := election.New(es.direct, name, opts...)
			noErr(t, err)
			watcher, err := election.New(es.direct, name, opts...)
			noErr(t, err)
			octx, stop := context.WithCancel(ctx)
			defer stop()
			obs, err := watcher.Observe(octx)
			noErr(t, err)

			var terms []int64
			place := func(term int64) int {
				for i, x := range terms {
					if x == term {
						return i + 1
					}
				}
				if term == 0 {
					return 0
				}
				return -1 // a term no candidate won
			}
			var views []leaderView
			step := func(what string) {
				term, led, err := watcher.Leader(ctx)
				noErr(t, err, what, ": Leader")
				lv := leaderView{place(term), led}
				if (es.name == "etcd" || es.name == "redis") && !led && term == 0 && len(terms) > 0 {
					// Documented: etcd has no record of the released term, and
					// Redis's fencing counter goes with its lease.
					lv.Term = len(terms)
				}
				// Observe: the value it settles on within 2 s.
				var ov leaderView
				deadline := time.After(2 * time.Second)
			wait:
				for {
					select {
					case l := <-obs:
						noErr(t, l.Err, what, ": Observe")
						ov = leaderView{place(l.Term), l.Led}
						if ov == lv {
							break wait
						}
					case <-deadline:
						break wait
					}
				}
				want(t, ov == lv, "%s: %s: Observe says %+v, Leader %+v", es.name, what, ov, lv)
				views = append(views, lv)
			}
			step("nobody campaigned")
			ta, err := a.Campaign(ctx)
			noErr(t, err)
			terms = append(terms, ta.Number())
			step("a leads")
			noErr(t, ta.Resign(ctx))
			step("a resigned")
			tb, err := b.Campaign(ctx)
			noErr(t, err)
			terms = append(terms, tb.Number())
			want(t, tb.Number() > ta.Number(), "b's term %d not above a's %d", tb.Number(), ta.Number())
			step("b leads")
			noErr(t, tb.Resign(ctx))
			step("b resigned")
			// c takes the election's lease and dies: it never refreshes, so
			// the lease expires by the store's clock.
			lc, err := lease.NewManager(es.direct).Acquire(ctx, name, lease.TTL(2*time.Second))
			noErr(t, err)
			terms = append(terms, lc.Fence())
			step("c leads")
			time.Sleep(3 * time.Second) // c's TTL (2 s) and the store's expiry sweep
			step("c's lease expired")
			results[es.name] = views
			t.Logf("%s: %+v", es.name, views)
		})
	}
	for name, v := range results {
		want(t, fmt.Sprint(v) == fmt.Sprint(results["table"]), "%s answered %+v, the table store %+v", name, v, results["table"])
	}
}

// TestI24ObserveOutage: an observer reads through a fault proxy, which is
// blackholed while the leader resigns and another candidate takes a new
// term. Observe must deliver an error within its CallTimeout (1 s) and,
// after the heal, the new term; 3 outages per store, the times logged
// (the bounds asserted are generous: a loaded machine is no failure).
func TestI24ObserveOutage(t *testing.T) {
	const (
		rounds  = 3
		callTTL = time.Second
	)
	ctx := context.Background()
	for _, es := range electionStores(t, true) {
		t.Run(es.name, func(t *testing.T) {
			name := testdb.Unique(t, "i24_outage")
			opts := []election.Option{election.TTL(2 * time.Second), election.PollInterval(50 * time.Millisecond), election.CallTimeout(callTTL)}
			watcher, err := election.New(es.proxied, name, opts...)
			noErr(t, err)
			octx, stop := context.WithCancel(ctx)
			defer stop()
			obs, err := watcher.Observe(octx)
			noErr(t, err)
			next := func(d time.Duration, ok func(election.Leadership) bool) (election.Leadership, time.Duration, bool) {
				start := time.Now()
				deadline := time.After(d)
				for {
					select {
					case l := <-obs:
						if ok(l) {
							return l, time.Since(start), true
						}
					case <-deadline:
						return election.Leadership{}, d, false
					}
				}
			}
			var errIn, termIn []time.Duration
			errsOK, termsOK, within1s := 0, 0, 0
			for r := range rounds {
				cand, err := election.New(es.direct, name, opts...)
				noErr(t, err)
				term, err := cand.Campaign(ctx)
				noErr(t, err)
				_, _, seen := next(10*time.Second, func(l election.Leadership) bool { return l.Err == nil && l.Term == term.Number() && l.Led })
				want(t, seen, "round %d: Observe never reported term %d", r, term.Number())

				es.proxy.Blackhole(true)
				cut := time.Now()
				noErr(t, term.Resign(ctx))
				other, err := election.New(es.direct, name, opts...)
				noErr(t, err)
				term2, err := other.Campaign(ctx)
				noErr(t, err)
				l, _, got := next(callTTL+5*time.Second, func(l election.Leadership) bool { return l.Err != nil })
				if got {
					errsOK++
					errIn = append(errIn, time.Since(cut))
					want(t, l.Term == term.Number(), "the error event carries term %d, want the last read %d", l.Term, term.Number())
				}
				time.Sleep(300 * time.Millisecond) // the outage goes on
				es.proxy.Blackhole(false)
				_, took, got := next(5*time.Second, func(l election.Leadership) bool { return l.Err == nil && l.Term == term2.Number() && l.Led })
				if got {
					termsOK++
					termIn = append(termIn, took)
					if took < time.Second {
						within1s++
					}
				}
				noErr(t, term2.Resign(ctx))
			}
			t.Logf("%s: %d outages: error events %d (after %v from the cut, CallTimeout %v), new term after the heal %d (after %v; %d within 1 s)",
				es.name, rounds, errsOK, errIn, callTTL, termsOK, termIn, within1s)
			want(t, errsOK == rounds, "%s: %d of %d outages reported an error", es.name, errsOK, rounds)
			want(t, termsOK == rounds, "%s: the new term reached the observer after %d of %d heals", es.name, termsOK, rounds)
		})
	}
}

// TestI24CampaignWhileLeading: a leader that calls Campaign or
// TryCampaign again gets its own term back at once (before, Campaign
// waited on itself until its context ended and TryCampaign answered
// ErrNotLeader); 10 calls each, on the table and Redis stores, the
// slowest logged. A Campaign of this Elector running while it wins
// returns the won term too.
func TestI24CampaignWhileLeading(t *testing.T) {
	tg := testdb.Get(t, testdb.Postgres)
	ts, err := sqlstore.New(tg.DB, sqlstore.Table(leaseTable))
	noErr(t, err)
	ctx := context.Background()
	for _, sc := range []struct {
		name  string
		store lease.Store
	}{{"table", ts}, {"redis", redisstore.New(testdb.Redis(t), redisstore.Prefix(redisPrefix))}} {
		t.Run(sc.name, func(t *testing.T) {
			e, err := election.New(sc.store, testdb.Unique(t, "i24_again"), election.TTL(3*time.Second))
			noErr(t, err)
			term, err := e.Campaign(ctx)
			noErr(t, err)
			defer term.Resign(ctx)
			const calls = 10
			same, slowest := 0, time.Duration(0)
			for range calls {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				start := time.Now()
				t2, err := e.Campaign(cctx)
				took := time.Since(start)
				cancel()
				noErr(t, err, "Campaign while leading")
				t3, err := e.TryCampaign(ctx)
				noErr(t, err, "TryCampaign while leading")
				if t2 == term && t3 == term {
					same++
				}
				slowest = max(slowest, took, time.Since(start)-took)
			}
			t.Logf("%s: %d of %d repeated Campaign+TryCampaign returned the current term; slowest call %v", sc.name, same, calls, slowest)
			want(t, same == calls, "%d of %d repeated campaigns returned the leader's term", same, calls)
			want(t, slowest < time.Second, "a leader's repeated Campaign took %v", slowest)
			// After the term ends, Campaign campaigns again.
			noErr(t, term.Resign(ctx))
			t4, err := e.TryCampaign(ctx)
			noErr(t, err)
			want(t, t4 != term && t4.Number() > term.Number(), "after resigning, a new term: got %d (was %d)", t4.Number(), term.Number())
			noErr(t, t4.Resign(ctx))
		})
	}
}

// TestI24EtcdWatches: on etcd, Observe and Campaign follow a watch on the
// election's key, not only their poll: with a 5 s PollInterval, 5 terms
// change hands (a resigns, b, campaigning, takes over); Observe must
// deliver each new term, and Campaign return, well before a poll would
// (both counted against 1 s; the times logged).
func TestI24EtcdWatches(t *testing.T) {
	cluster := servers.StartEtcdCluster(t)
	store := etcdstore.New(etcdClientAt(t, cluster.Endpoints()...), etcdstore.Prefix("i24-watch/"+redisPrefix))
	name := testdb.Unique(t, "i24_watch")
	const rounds = 5
	campaigned, observed := takeovers(t, store, store, name, rounds, election.TTL(5*time.Second), election.PollInterval(5*time.Second))
	campFast, obsFast := within(campaigned, time.Second), within(observed, time.Second)
	t.Logf("etcd, PollInterval 5 s: Campaign took over after %v (%d of %d within 1 s); Observe delivered the new term after %v (%d of %d within 1 s)",
		roundMs(campaigned), campFast, rounds, roundMs(observed), obsFast, rounds)
	want(t, campFast == rounds && obsFast == rounds, "with the watch, takeovers and observations must not wait for the 5 s poll")
}
