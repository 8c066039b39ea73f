package fence_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/etcdstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore/pgnotify"
	"github.com/lockplugin/lockplugin/tests/internal/driverhook"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// quietCandidates, quietWindow: the stable election TestI25QuietElection
// measures (issue 25: 10 candidates, stable 10 s).
const (
	quietCandidates = 10
	quietWindow     = 10 * time.Second
)

// countedPostgres opens the shared PostgreSQL through a driver wrapper
// that counts every statement its connections run (queries and execs,
// direct or prepared; not pings or resets).
func countedPostgres(t *testing.T) (*gorm.DB, *atomic.Int64) {
	t.Helper()
	tg := testdb.Get(t, testdb.Postgres)
	cfg, err := pgx.ParseConfig(tg.DSN)
	noErr(t, err, "parsing the PostgreSQL DSN")
	counter := new(atomic.Int64)
	pool := sql.OpenDB(driverhook.Wrap(stdlib.GetConnector(*cfg), driverhook.Hooks{
		AfterStatement: func(_ context.Context, _ string, err error) error {
			counter.Add(1)
			return err
		},
	}))
	t.Cleanup(func() { _ = pool.Close() })
	db, err := gorm.Open(postgres.New(postgres.Config{Conn: pool}), &gorm.Config{Logger: logger.Discard})
	noErr(t, err)
	return db, counter
}

// runStableElection starts n candidates on store, waits until one leads
// and the others wait (1 s past the win), then measures count over
// window, with every candidate still campaigning or leading. It returns
// count's increase per second and how many terms were won in the window
// (1 expected: the election stayed stable).
func runStableElection(t *testing.T, store lease.Store, name string, n int, window time.Duration, count func() int64, opts ...election.Option) (perSec float64, terms int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var won atomic.Int64
	first := make(chan struct{}, n)
	for range n {
		e, err := election.New(store, name, opts...)
		noErr(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			term, err := e.Campaign(ctx)
			if err != nil {
				return
			}
			won.Add(1)
			first <- struct{}{}
			<-ctx.Done()
			_ = term.Resign(context.Background())
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("no candidate won within 30 s")
	}
	time.Sleep(time.Second)
	w0 := won.Load()
	c0 := count()
	start := time.Now()
	time.Sleep(window)
	c1 := count()
	el := time.Since(start)
	return float64(c1-c0) / el.Seconds(), int(won.Load() - w0)
}

// etcdCounters reads, from one member's /metrics, the cluster's raft
// proposals committed so far (every write the cluster agreed on: puts,
// deletes, transactions, lease grants and revokes), and the current
// key-value revision (a read).
func etcdCounters(t *testing.T, c *servers.EtcdCluster, cl *clientv3.Client) (proposals, revision int64) {
	t.Helper()
	for _, m := range c.Members {
		resp, err := http.Get("http://" + m.Addr + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "etcd_server_proposals_committed_total "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err == nil && int64(f) > proposals {
					proposals = int64(f)
				}
			}
		}
	}
	want(t, proposals > 0, "no etcd_server_proposals_committed_total in any member's /metrics")
	r, err := cl.Get(context.Background(), "i25-quiet/probe")
	noErr(t, err, "etcd revision")
	return proposals, r.Header.Revision
}

// TestI25QuietElection: 10 candidates in a stable election (default TTL
// 10 s and default options), 10 s measured. On the table store
// (shared PostgreSQL), every statement of the candidates' pool is
// counted: at most 2 per second per idle candidate (the leader's
// refreshes are counted against them too). On etcd (a cluster of the
// test's own), raft proposals committed and the revision: at most 5
// writes per second. On Redis (a server of the test's own), the
// commands clients send (INFO commandstats, without the commands the
// scripts run): at most 10 per TTL per candidate; its baseline is the
// same run on the store with its watches hidden. Elsewhere the same run
// with PollInterval(50ms), every candidate checking every 50 ms, is the
// baseline.
func TestI25QuietElection(t *testing.T) {
	t.Run("table", func(t *testing.T) {
		db, counter := countedPostgres(t)
		store, err := sqlstore.New(db, sqlstore.Table(leaseTable))
		noErr(t, err)
		name := fmt.Sprintf("i25-quiet-table-%d", time.Now().UnixNano())
		base, bterms := runStableElection(t, store, name+"-base", quietCandidates, quietWindow/2, counter.Load, election.PollInterval(lease.DefaultPollInterval))
		got, terms := runStableElection(t, store, name, quietCandidates, quietWindow, counter.Load)
		perIdle := got / float64(quietCandidates-1)
		t.Logf("table store, %d candidates: %.1f statements/s (%.2f per idle candidate); baseline PollInterval(50ms): %.1f statements/s; terms in the window: %d, baseline %d",
			quietCandidates, got, perIdle, base, terms, bterms)
		want(t, terms == 0, "the election was not stable: %d new terms", terms)
		want(t, perIdle <= 2, "%.2f statements/s per idle candidate, want <= 2", perIdle)
	})
	t.Run("table-listen", func(t *testing.T) {
		// The same on a store with Listen: waiting candidates wait on the
		// store's LISTEN connection and the holder's expiry
		// (WatchRelease), and read the holder every third of the TTL.
		db, counter := countedPostgres(t)
		store, err := sqlstore.New(db, sqlstore.Table(leaseTable), pgnotify.Listen())
		noErr(t, err)
		name := fmt.Sprintf("i25-quiet-listen-%d", time.Now().UnixNano())
		got, terms := runStableElection(t, store, name, quietCandidates, quietWindow, counter.Load)
		perIdle := got / float64(quietCandidates-1)
		t.Logf("table store with Listen, %d candidates: %.1f statements/s (%.2f per idle candidate); terms in the window: %d",
			quietCandidates, got, perIdle, terms)
		want(t, terms == 0, "the election was not stable: %d new terms", terms)
		want(t, perIdle <= 2, "%.2f statements/s per idle candidate, want <= 2", perIdle)
	})
	t.Run("etcd", func(t *testing.T) {
		cluster := servers.StartEtcdCluster(t)
		cl := etcdClientAt(t, cluster.Endpoints()...)
		store := etcdstore.New(cl, etcdstore.Prefix("i25-quiet/"+redisPrefix))
		var revs [2]int64 // the revision at the last two counts: the window's start and end
		countProps := func() int64 { p, r := etcdCounters(t, cluster, cl); revs[0], revs[1] = revs[1], r; return p }
		baseProps, bterms := runStableElection(t, store, "i25-quiet-base", quietCandidates, quietWindow/2, countProps, election.PollInterval(lease.DefaultPollInterval))
		baseRevs := float64(revs[1]-revs[0]) / (quietWindow / 2).Seconds()
		gotProps, terms := runStableElection(t, store, "i25-quiet", quietCandidates, quietWindow, countProps)
		gotRevs := float64(revs[1]-revs[0]) / quietWindow.Seconds()
		t.Logf("etcd, %d candidates: %.2f proposals/s, %.2f revisions/s; baseline PollInterval(50ms): %.1f proposals/s, %.2f revisions/s; terms in the window: %d, baseline %d",
			quietCandidates, gotProps, gotRevs, baseProps, baseRevs, terms, bterms)
		want(t, terms == 0, "the election was not stable: %d new terms", terms)
		want(t, gotProps <= 5, "%.2f etcd proposals/s, want <= 5", gotProps)
		want(t, gotRevs <= 5, "%.2f etcd revisions/s, want <= 5", gotRevs)
	})
	t.Run("redis", func(t *testing.T) {
		// A Redis of the test's own: INFO commandstats counts every client
		// and nothing else.
		srv := servers.StartRedis(t)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		store := ownRedisStore(t, c)
		var calls [2]map[string]int64 // the calls at the last two counts: the window's start and end
		count := func() int64 {
			m := commandCalls(t, c)
			calls[0], calls[1] = calls[1], m
			return clientCalls(m)
		}
		// The baseline: the same store without its watches, polling as
		// every Redis candidate did before them (default options: every
		// TTL/10).
		base, bterms := runStableElection(t, pollingOnly{store, store}, "i25-quiet-base", quietCandidates, quietWindow/2, count)
		got, terms := runStableElection(t, store, "i25-quiet", quietCandidates, quietWindow, count)
		var each []string
		for cmd, n := range calls[1] {
			if d := n - calls[0][cmd]; d > 0 && cmd != "info" {
				each = append(each, fmt.Sprintf("%s %d", cmd, d))
			}
		}
		sort.Strings(each)
		perTTL := got * election.DefaultTTL.Seconds() / quietCandidates
		t.Logf("Redis, %d candidates (TTL %v): %.2f client commands/s, %.1f per TTL per candidate (every command in the window, the scripts' own included: %s); baseline polling only (no watch, default options): %.1f commands/s; terms in the window: %d, baseline %d",
			quietCandidates, election.DefaultTTL, got, perTTL, strings.Join(each, ", "), base, terms, bterms)
		want(t, terms == 0, "the election was not stable: %d new terms", terms)
		want(t, perTTL <= 10, "%.1f Redis commands per TTL per candidate, want <= 10 (O(1) per TTL, not per poll)", perTTL)
	})
}
