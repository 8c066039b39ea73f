package lease_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/glebarez/sqlite"
	"github.com/gofrs/flock"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// countingPool counts the statements sent through it.
type countingPool struct {
	*sql.DB
	n atomic.Int64
}

func (p *countingPool) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	p.n.Add(1)
	return p.DB.PrepareContext(ctx, q)
}

func (p *countingPool) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	p.n.Add(1)
	return p.DB.ExecContext(ctx, q, args...)
}

func (p *countingPool) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	p.n.Add(1)
	return p.DB.QueryContext(ctx, q, args...)
}

func (p *countingPool) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	p.n.Add(1)
	return p.DB.QueryRowContext(ctx, q, args...)
}

// countedDB opens kind on a private pool whose statements are counted.
func countedDB(b testing.TB, kind string) (*gorm.DB, *countingPool) {
	b.Helper()
	tg := testdb.Open(b, kind, nil)
	pool := &countingPool{DB: tg.SQL}
	var d gorm.Dialector
	switch kind {
	case testdb.Postgres:
		d = postgres.New(postgres.Config{Conn: pool})
	case testdb.MySQL:
		d = mysql.New(mysql.Config{Conn: pool})
	default:
		d = &sqlite.Dialector{Conn: pool}
	}
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		b.Fatal(err)
	}
	return db, pool
}

// countHook counts Redis round trips.
type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

func countedRedis(b *testing.B) (*redis.Client, *atomic.Int64) {
	// ContextTimeoutEnabled, as a client that honours context deadlines
	// is made: the store then declares it (lease.ContextHonourer), and the
	// Manager calls it without a goroutine per call. redislock, on the
	// same options, is not affected by it.
	c := redis.NewClient(&redis.Options{Addr: testdb.RedisAddr(b), ContextTimeoutEnabled: true})
	b.Cleanup(func() { cleanRedis(c); _ = c.Close() })
	var n atomic.Int64
	c.AddHook(countHook{&n})
	return c, &n
}

func benchName(b *testing.B) string { return testdb.Unique(b, namePrefix+"bench") }

// acquireRelease times Manager.Acquire + Lease.Release on store and reports
// the statements or round trips each took.
func acquireRelease(b *testing.B, store lease.Store, count *atomic.Int64, unit string) {
	ctx := context.Background()
	m := lease.NewManager(store)
	name := benchName(b)
	var acquires int64
	b.ResetTimer()
	start := count.Load()
	for range b.N {
		before := count.Load()
		l, err := m.Acquire(ctx, name, lease.TTL(10*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		acquires += count.Load() - before
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(count.Load()-start)/float64(b.N), unit+"/op")
	b.ReportMetric(float64(acquires)/float64(b.N), unit+"/acquire")
}

// BenchmarkAcquireRelease: one lease taken and released, against the
// nearest thing without expiry or fencing on the same backend in the same
// run: bsm/redislock on Redis, a raw insert-a-row lock on SQL databases,
// a bare flock on files.
func BenchmarkAcquireRelease(b *testing.B) {
	b.Run("redis", func(b *testing.B) {
		b.Run("lockplugin", func(b *testing.B) {
			c, n := countedRedis(b)
			u0 := redisScriptMicros(b, c)
			acquireRelease(b, redisstore.New(c, redisstore.Prefix(redisPrefix)), n, "roundtrips")
			b.ReportMetric((redisScriptMicros(b, c)-u0)/float64(b.N), "server-µs/op")
		})
		b.Run("baseline=redislock", func(b *testing.B) {
			c, n := countedRedis(b)
			ctx := context.Background()
			locker := redislock.New(c)
			key := redisPrefix + "redislock:" + benchName(b)
			var acquires int64
			u0 := redisScriptMicros(b, c)
			b.ResetTimer()
			start := n.Load()
			for range b.N {
				before := n.Load()
				l, err := locker.Obtain(ctx, key, 10*time.Second, nil)
				if err != nil {
					b.Fatal(err)
				}
				acquires += n.Load() - before
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(n.Load()-start)/float64(b.N), "roundtrips/op")
			b.ReportMetric(float64(acquires)/float64(b.N), "roundtrips/acquire")
			b.ReportMetric((redisScriptMicros(b, c)-u0)/float64(b.N), "server-µs/op")
		})
	})
	for _, kind := range []string{testdb.SQLite, testdb.Postgres, testdb.MySQL} {
		b.Run(kind, func(b *testing.B) {
			b.Run("lockplugin", func(b *testing.B) {
				db, pool := countedDB(b, kind)
				acquireRelease(b, tableStore(b, db), &pool.n, "stmts")
			})
			b.Run("baseline=raw-sql", func(b *testing.B) {
				db, pool := countedDB(b, kind)
				rawRowLock(b, db, pool)
			})
		})
	}
	b.Run("local", func(b *testing.B) {
		dir := b.TempDir()
		b.Run("lockplugin", func(b *testing.B) {
			s, err := lease.NewLocalStore(dir)
			if err != nil {
				b.Fatal(err)
			}
			var none atomic.Int64
			acquireRelease(b, s, &none, "stmts")
		})
		b.Run("baseline=gofrs-flock", func(b *testing.B) {
			path := filepath.Join(dir, "raw.lock")
			for range b.N {
				f := flock.New(path)
				if ok, err := f.TryLock(); !ok || err != nil {
					b.Fatal(ok, err)
				}
				if err := f.Unlock(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// redisScriptMicros is the server's time in scripts so far (EVAL and
// EVALSHA, inner commands included, from INFO commandstats), in
// microseconds: both sides of the Redis pair run every call as a script
// (redislock's Obtain too), so the difference per operation is the
// server-side work of the guarantees redislock does not give (fences
// above a clock floor, counters that go with their lease, the owner's
// idempotent retry, notices for waiters and watchers).
func redisScriptMicros(b *testing.B, c *redis.Client) float64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_eval:") && !strings.HasPrefix(line, "cmdstat_evalsha:") {
			continue
		}
		for _, field := range strings.Split(strings.TrimSpace(line[strings.IndexByte(line, ':')+1:]), ",") {
			if v, ok := strings.CutPrefix(field, "usec="); ok {
				us, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatalf("INFO commandstats: %q: %v", line, err)
				}
				total += us
			}
		}
	}
	return total
}

// rawRowLock is the baseline lock: insert a row to take it, delete it to
// release it. No expiry, no fencing, no owner check.
func rawRowLock(b *testing.B, db *gorm.DB, pool *countingPool) {
	ctx := context.Background()
	d := dialects.Of(db)
	tbl := drivers.For(d).QuoteIdent("lease_bench_raw")
	if _, err := pool.DB.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+tbl+" (name VARCHAR(191) NOT NULL PRIMARY KEY)"); err != nil {
		b.Fatal(err)
	}
	ph := "?"
	if d.Kind == dialects.Postgres {
		ph = "$1"
	}
	insert := "INSERT INTO " + tbl + " (name) VALUES (" + ph + ") ON CONFLICT DO NOTHING"
	if d.IsMySQLFamily() {
		insert = "INSERT IGNORE INTO " + tbl + " (name) VALUES (" + ph + ")"
	}
	del := "DELETE FROM " + tbl + " WHERE name = " + ph
	name := benchName(b)
	var acquires int64
	b.ResetTimer()
	start := pool.n.Load()
	for range b.N {
		before := pool.n.Load()
		res, err := pool.ExecContext(ctx, insert, name)
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			b.Fatal("raw lock not obtained")
		}
		acquires += pool.n.Load() - before
		if _, err := pool.ExecContext(ctx, del, name); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(pool.n.Load()-start)/float64(b.N), "stmts/op")
	b.ReportMetric(float64(acquires)/float64(b.N), "stmts/acquire")
}

// signalScripter wraps a Redis client for redislock and reports each
// script call that was refused (a nil reply), like signalStore.
type signalScripter struct {
	redis.Scripter
	refused chan struct{}
}

func (s signalScripter) note(cmd *redis.Cmd) *redis.Cmd {
	if errors.Is(cmd.Err(), redis.Nil) {
		select {
		case s.refused <- struct{}{}:
		default:
		}
	}
	return cmd
}

func (s signalScripter) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return s.note(s.Scripter.EvalSha(ctx, sha, keys, args...))
}

func (s signalScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.note(s.Scripter.Eval(ctx, script, keys, args...))
}

// handoffPoll is the retry interval of both sides of BenchmarkHandoff.
const handoffPoll = 5 * time.Millisecond

// BenchmarkHandoff: a waiter is polling for a held lease; the holder
// releases it at a random point of the waiter's retry cycle; handoff-ms is
// how long the waiter then takes to hold it. Both lockplugin and redislock
// retry every 5 ms (lockplugin draws each wait from 2.5-7.5 ms), so the
// figure is about half the interval plus a round trip.
func BenchmarkHandoff(b *testing.B) {
	run := func(b *testing.B, store lease.Store) {
		sig := newSignalStore(store)
		m := lease.NewManager(sig, lease.PollInterval(handoffPoll))
		handoff(b, sig.refused, func(ctx context.Context, name string, wait time.Duration) (func() error, error) {
			opts := []lease.Option{lease.TTL(10 * time.Second)}
			if wait > 0 {
				opts = append(opts, lease.WaitAtMost(wait))
			}
			l, err := m.Acquire(ctx, name, opts...)
			if err != nil {
				return nil, err
			}
			return func() error { return l.Release(context.Background()) }, nil
		})
	}
	b.Run("local", func(b *testing.B) {
		b.Run("lockplugin", func(b *testing.B) {
			s, err := lease.NewLocalStore(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			run(b, s)
		})
	})
	for _, kind := range []string{testdb.SQLite, testdb.Postgres, testdb.MySQL} {
		b.Run(kind, func(b *testing.B) {
			b.Run("lockplugin", func(b *testing.B) { run(b, tableStore(b, testdb.Get(b, kind).DB)) })
		})
	}
	b.Run("redis", func(b *testing.B) {
		b.Run("lockplugin", func(b *testing.B) {
			c, _ := countedRedis(b)
			run(b, redisstore.New(c, redisstore.Prefix(redisPrefix)))
		})
		b.Run("baseline=redislock", func(b *testing.B) {
			c, _ := countedRedis(b)
			sig := signalScripter{Scripter: c, refused: make(chan struct{}, 1)}
			locker := redislock.New(sig)
			handoff(b, sig.refused, func(ctx context.Context, name string, wait time.Duration) (func() error, error) {
				opt := &redislock.Options{}
				if wait > 0 {
					opt.RetryStrategy = redislock.LinearBackoff(handoffPoll)
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, wait)
					defer cancel()
				}
				l, err := locker.Obtain(ctx, redisPrefix+"redislock:"+name, 10*time.Second, opt)
				if err != nil {
					return nil, err
				}
				return func() error { return l.Release(context.Background()) }, nil
			})
		})
	})
}

// handoff runs the handoff measurement over take, which acquires name
// (waiting up to wait when wait > 0) and returns its release function.
// refused receives a value whenever an acquire finds the lease held.
func handoff(b *testing.B, refused chan struct{}, take func(ctx context.Context, name string, wait time.Duration) (func() error, error)) {
	ctx := context.Background()
	name := benchName(b)
	var total time.Duration
	type got struct {
		release func() error
		at      time.Time
		err     error
	}
	b.ResetTimer()
	for range b.N {
		release, err := take(ctx, name, 0)
		if err != nil {
			b.Fatal(err)
		}
		select { // forget refusals from before this round
		case <-refused:
		default:
		}
		done := make(chan got, 1)
		go func() {
			r, err := take(ctx, name, 10*time.Second)
			done <- got{r, time.Now(), err}
		}()
		<-refused // the waiter found it held and is polling
		// Release at a random point of the waiter's retry cycle, as a real
		// holder would, not always just after its last try.
		time.Sleep(rand.N(handoffPoll))
		released := time.Now()
		if err := release(); err != nil {
			b.Fatal(err)
		}
		g := <-done
		if g.err != nil {
			b.Fatal(g.err)
		}
		total += g.at.Sub(released)
		if err := g.release(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "handoff-ms")
}

// BenchmarkOneName: workers contend for one name on the table store, each
// under its own owner token, releasing the name at once whenever it gets
// it. ns/op is the time per acquisition (acquired/s its inverse, the
// name's throughput); calls/s counts store calls, refusals included;
// holder-us and refused-us are the mean latencies of the holder's calls and
// of refusals. The baseline in the same run, baseline=upsert, is the
// store's acquire before refusals were made read only: one upsert that
// locks the row even when it refuses.
//
//   - manager: each worker loops on Manager.Acquire with Wait, polling a
//     held name every 5 ms (2.5-7.5 ms), then Release: waiters as an
//     application has them. A refusal that writes slows the holder.
//   - spin: straight store calls, a refused worker retrying at once: the
//     worst case, where the refusals alone saturate the machine. There
//     baseline=update-no-match is what a refusal cannot beat, an UPDATE of
//     the same table that matches no row, with the same workers.
func BenchmarkOneName(b *testing.B) {
	manager := func(s *countingStore, workers int) func(b *testing.B) {
		return func(b *testing.B) {
			m := lease.NewManager(s, lease.PollInterval(handoffPoll))
			name := benchName(b)
			oneName(b, workers, &s.calls, func(ctx context.Context, _ string) error {
				l, err := m.Acquire(ctx, name, lease.TTL(10*time.Second), lease.WaitAtMost(time.Minute))
				if err != nil {
					return err
				}
				return l.Release(ctx)
			})
			s.report(b)
		}
	}
	spin := func(s *countingStore, workers int) func(b *testing.B) {
		return func(b *testing.B) {
			name := benchName(b)
			oneName(b, workers, &s.calls, func(ctx context.Context, owner string) error {
				for {
					_, ok, err := s.Acquire(ctx, name, owner, 10*time.Second)
					if err != nil {
						return err
					}
					if ok {
						break
					}
				}
				ok, err := s.Release(ctx, name, owner)
				if err == nil && !ok {
					err = errors.New("release of a held lease refused")
				}
				return err
			})
			s.report(b)
		}
	}
	for _, mode := range []string{"manager", "spin"} {
		b.Run(mode, func(b *testing.B) {
			for _, workers := range []int{1, 16} {
				b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
					for _, kind := range []string{testdb.Postgres, testdb.MySQL, testdb.SQLite} {
						b.Run(kind, func(b *testing.B) {
							run := manager
							if mode == "spin" {
								run = spin
							}
							b.Run("lockplugin", func(b *testing.B) {
								run(newCountingStore(tableStore(b, testdb.Get(b, kind).DB)), workers)(b)
							})
							b.Run("baseline=upsert", func(b *testing.B) {
								run(newCountingStore(upsertStore(b, kind)), workers)(b)
							})
							if mode == "spin" {
								b.Run("baseline=update-no-match", func(b *testing.B) {
									tg := testdb.Get(b, kind)
									tableStore(b, tg.DB) // the table exists
									q := "UPDATE " + drivers.For(tg.Dialect).QuoteIdent(table) + " SET fence = fence WHERE lock_name = ?"
									if tg.Dialect.Kind == dialects.Postgres {
										q = strings.Replace(q, "?", "$1", 1)
									}
									name := benchName(b)
									var calls atomic.Int64
									oneName(b, workers, &calls, func(ctx context.Context, _ string) error {
										calls.Add(1)
										_, err := tg.SQL.ExecContext(ctx, q, name)
										return err
									})
								})
							}
						})
					}
				})
			}
		})
	}
}

// BenchmarkRefusal: a name held by one owner for an hour, and workers
// goroutines asking for it under their own owners, every call refused:
// what a refusal costs without a holder's writes to wait behind (in
// BenchmarkOneName those dominate). ns/op is the time per refusal over
// all workers, refused-us/call the mean latency of one, stmts/call the
// statements each sent. baseline=upsert, in the same run, refuses with
// upsertAcquire, one statement; both on a pool of their own.
func BenchmarkRefusal(b *testing.B) {
	for _, workers := range []int{1, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for _, kind := range []string{testdb.Postgres, testdb.MySQL, testdb.SQLite} {
				b.Run(kind, func(b *testing.B) {
					b.Run("lockplugin", func(b *testing.B) {
						db, pool := countedDB(b, kind)
						tableStore(b, db) // skips where refused
						// Retention off: its background batch, once per
						// store, is no part of a refusal.
						s, err := sqlstore.New(db, sqlstore.Table(table), sqlstore.Retention(-1))
						if err != nil {
							b.Fatal(err)
						}
						refusals(b, s, pool, workers)
					})
					b.Run("baseline=upsert", func(b *testing.B) {
						db, pool := countedDB(b, kind)
						refusals(b, upsertStoreOn(b, db, pool), pool, workers)
					})
				})
			}
		})
	}
}

// heldName returns a new name held on s for an hour by an owner of its
// own, released when b ends.
func heldName(b *testing.B, s lease.Store) string {
	name := benchName(b)
	holder := fmt.Sprintf("bench-holder-%d", time.Now().UnixNano())
	if _, ok, err := s.Acquire(context.Background(), name, holder, time.Hour); err != nil || !ok {
		b.Fatalf("the holder's acquire: %v, %v", ok, err)
	}
	b.Cleanup(func() { _, _ = s.Release(context.Background(), name, holder) })
	return name
}

// refusals runs b.N refused acquires of a held name over workers
// goroutines.
func refusals(b *testing.B, s lease.Store, pool *countingPool, workers int) {
	ctx := context.Background()
	name := heldName(b, s)
	var left, ns atomic.Int64
	left.Store(int64(b.N))
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := pool.n.Load()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("bench-owner-%d-%d", w, time.Now().UnixNano())
			for left.Add(-1) >= 0 {
				begin := time.Now()
				_, ok, err := s.Acquire(ctx, name, owner, 10*time.Second)
				ns.Add(time.Since(begin).Nanoseconds())
				if err == nil && ok {
					err = errors.New("a held name was granted")
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	select {
	case err := <-errc:
		b.Fatal(err)
	default:
	}
	b.ReportMetric(float64(ns.Load())/float64(b.N)/1e3, "refused-us/call")
	b.ReportMetric(float64(pool.n.Load()-start)/float64(b.N), "stmts/call")
}

// upsertAcquire is the table store's acquire before it made refusals read
// only: one upsert that locks the row even when it refuses. SQLite keeps
// the upsert (without the same-owner retry).
var upsertAcquire = map[dialects.Kind]string{
	dialects.Postgres: `INSERT INTO {t} AS l (lock_name, owner, expires_at, fence) VALUES ($1, $2, CASE WHEN CAST($3 AS BIGINT) = 0 THEN 0 ELSE {now} + CAST($3 AS BIGINT) END, 1) ` +
		`ON CONFLICT (lock_name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, fence = l.fence + 1 ` +
		`WHERE l.expires_at <> 0 AND l.expires_at <= {now} RETURNING fence`,
	dialects.SQLite: `INSERT INTO {t} AS l (lock_name, owner, expires_at, fence) VALUES (?1, ?2, CASE WHEN ?3 = 0 THEN 0 ELSE {now} + ?3 END, 1) ` +
		`ON CONFLICT (lock_name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, fence = l.fence + 1 ` +
		`WHERE l.expires_at <> 0 AND l.expires_at <= {now} RETURNING fence`,
	dialects.MariaDB: "INSERT INTO {t} (lock_name, owner, expires_at, fence) VALUES (?, ?, CASE WHEN ? = 0 THEN 0 ELSE {now} + ? END, LAST_INSERT_ID(1)) " +
		"ON DUPLICATE KEY UPDATE " +
		"owner = IF(expires_at <> 0 AND expires_at <= {now}, ?, owner), " +
		"fence = IF(expires_at <> 0 AND expires_at <= {now}, LAST_INSERT_ID(fence + 1), fence + LAST_INSERT_ID(fence - fence)), " +
		"expires_at = IF(expires_at <> 0 AND expires_at <= {now}, CASE WHEN ? = 0 THEN 0 ELSE {now} + ? END, expires_at)",
}

// legacyStore is the table store with upsertAcquire as its Acquire: the
// baseline of BenchmarkOneName, measured in the same run.
type legacyStore struct {
	*sqlstore.Store
	db   execQuerier
	kind dialects.Kind
	q    string
}

// execQuerier is what legacyStore sends its acquire through: a *sql.DB,
// or a countingPool that counts the statements.
type execQuerier interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

func upsertStore(b testing.TB, kind string) *legacyStore {
	tg := testdb.Get(b, kind)
	return upsertStoreOn(b, tg.DB, tg.SQL)
}

// upsertStoreOn is upsertStore on db, its acquire sent through conn.
func upsertStoreOn(b testing.TB, db *gorm.DB, conn execQuerier) *legacyStore {
	d := dialects.Of(db)
	k := d.Kind
	if k == dialects.MySQL {
		k = dialects.MariaDB
	}
	q := strings.NewReplacer("{t}", drivers.For(d).QuoteIdent(table), "{now}", drivers.For(d).NowMillis()).Replace(upsertAcquire[k])
	return &legacyStore{Store: tableStore(b, db), db: conn, kind: k, q: q}
}

func (s *legacyStore) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	ms := ttl.Milliseconds()
	if s.kind == dialects.MariaDB {
		res, err := s.db.ExecContext(ctx, s.q, name, owner, ms, ms, owner, ms, ms)
		if err != nil {
			return 0, false, err
		}
		fence, err := res.LastInsertId()
		return fence, fence > 0, err
	}
	var fence int64
	err := s.db.QueryRowContext(ctx, s.q, name, owner, ms).Scan(&fence)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return fence, err == nil, err
}

// countingStore counts the calls made to a Store and the time they took,
// refusals apart.
type countingStore struct {
	lease.Store
	calls                      atomic.Int64
	refused, refusedNs, heldNs atomic.Int64
}

func newCountingStore(s lease.Store) *countingStore { return &countingStore{Store: s} }

func (s *countingStore) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	s.calls.Add(1)
	begin := time.Now()
	fence, ok, err := s.Store.Acquire(ctx, name, owner, ttl)
	if d := time.Since(begin).Nanoseconds(); ok {
		s.heldNs.Add(d)
	} else {
		s.refused.Add(1)
		s.refusedNs.Add(d)
	}
	return fence, ok, err
}

func (s *countingStore) Release(ctx context.Context, name, owner string) (bool, error) {
	s.calls.Add(1)
	begin := time.Now()
	defer func() { s.heldNs.Add(time.Since(begin).Nanoseconds()) }()
	return s.Store.Release(ctx, name, owner)
}

// report adds the mean latency of the holder's calls (its acquire and
// release) and of refusals, in microseconds.
func (s *countingStore) report(b *testing.B) {
	b.ReportMetric(float64(s.heldNs.Load())/2/float64(b.N)/1e3, "holder-us/call")
	if n := s.refused.Load(); n > 0 {
		b.ReportMetric(float64(s.refusedNs.Load())/float64(n)/1e3, "refused-us/call")
	}
}

// oneName runs b.N rounds of round over workers goroutines released
// together (one round: take the name and release it) and reports
// acquired/s and calls/s (from calls).
func oneName(b *testing.B, workers int, calls *atomic.Int64, round func(ctx context.Context, owner string) error) {
	ctx := context.Background()
	var left atomic.Int64
	left.Store(int64(b.N))
	start := make(chan struct{})
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("bench-owner-%d-%d", w, time.Now().UnixNano())
			<-start
			for left.Add(-1) >= 0 {
				if err := round(ctx, owner); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	b.ResetTimer()
	before := calls.Load()
	begin := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(begin).Seconds()
	b.StopTimer()
	select {
	case err := <-errc:
		b.Fatal(err)
	default:
	}
	b.ReportMetric(float64(b.N)/elapsed, "acquired/s")
	b.ReportMetric(float64(calls.Load()-before)/elapsed, "calls/s")
}
