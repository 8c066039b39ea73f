package lease_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
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
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
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
func countedDB(b *testing.B, kind string) (*gorm.DB, *countingPool) {
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
	c := redis.NewClient(&redis.Options{Addr: testdb.RedisAddr(b)})
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
			acquireRelease(b, redisstore.New(c, redisstore.Prefix(redisPrefix)), n, "roundtrips")
		})
		b.Run("baseline=redislock", func(b *testing.B) {
			c, n := countedRedis(b)
			ctx := context.Background()
			locker := redislock.New(c)
			key := redisPrefix + "redislock:" + benchName(b)
			var acquires int64
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

// rawRowLock is the baseline lock: insert a row to take it, delete it to
// release it. No expiry, no fencing, no owner check.
func rawRowLock(b *testing.B, db *gorm.DB, pool *countingPool) {
	ctx := context.Background()
	d := dialects.Of(db)
	tbl := d.QuoteIdent("lease_bench_raw")
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
				opts = append(opts, lease.Wait(wait))
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

// BenchmarkOneName: workers contend for one name straight on the table
// store (no Manager, no polling sleep): each worker tries to take it under
// its own owner token and releases it at once when it gets it. One op is
// one acquire attempt; acquired/s is the name's throughput (handovers per
// second) and calls/s the store calls per second, refusals included. The
// baseline in the same run is what a refusal cannot beat: an UPDATE of the
// same table that matches no row, with the same workers.
func BenchmarkOneName(b *testing.B) {
	for _, kind := range []string{testdb.Postgres, testdb.MySQL, testdb.SQLite} {
		b.Run(kind, func(b *testing.B) {
			for _, workers := range []int{1, 16} {
				b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
					b.Run("lockplugin", func(b *testing.B) {
						s := tableStore(b, testdb.Get(b, kind).DB)
						name := benchName(b)
						oneName(b, workers, func(ctx context.Context, owner string) (int, error) {
							_, ok, err := s.Acquire(ctx, name, owner, 10*time.Second)
							if err != nil || !ok {
								return 1, err
							}
							ok, err = s.Release(ctx, name, owner)
							if err == nil && !ok {
								err = errors.New("release of a held lease refused")
							}
							return 2, err
						})
					})
					b.Run("baseline=update-no-match", func(b *testing.B) {
						tg := testdb.Get(b, kind)
						tableStore(b, tg.DB) // the table exists
						q := "UPDATE " + tg.Dialect.QuoteIdent(table) + " SET fence = fence WHERE lock_name = ?"
						if tg.Dialect.Kind == dialects.Postgres {
							q = strings.Replace(q, "?", "$1", 1)
						}
						name := benchName(b)
						oneName(b, workers, func(ctx context.Context, _ string) (int, error) {
							_, err := tg.SQL.ExecContext(ctx, q, name)
							return 1, err
						})
					})
				})
			}
		})
	}
}

// oneName runs b.N attempts of try over workers goroutines released
// together, and reports acquired/s (attempts that made two calls: an
// acquire and its release) and calls/s.
func oneName(b *testing.B, workers int, try func(ctx context.Context, owner string) (calls int, err error)) {
	ctx := context.Background()
	var left, calls, acquired atomic.Int64
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
				n, err := try(ctx, owner)
				if err != nil {
					errc <- err
					return
				}
				calls.Add(int64(n))
				if n == 2 {
					acquired.Add(1)
				}
			}
		}()
	}
	b.ResetTimer()
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
	b.ReportMetric(float64(acquired.Load())/elapsed, "acquired/s")
	b.ReportMetric(float64(calls.Load())/elapsed, "calls/s")
}
