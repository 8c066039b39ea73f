package lease_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bsm/redislock"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// BenchmarkRedisFloor: Manager + redisstore, the Redis store called
// directly (no Manager: the floor under it), and bsm/redislock, one lease
// taken and released each, interleaved in blocks of 50 operations within
// one process (the order reversed every other round), so that a loaded
// machine's swings hit all three alike. It reports the median over the
// rounds of each one's time per operation divided by redislock's in the
// same round (manager/redislock, store/redislock), and allocations per
// operation. b.N operations of each are run; use -benchtime 2000x or more
// for at least 40 rounds.
func BenchmarkRedisFloor(b *testing.B) {
	c, _ := countedRedis(b)
	ctx := context.Background()
	s := redisstore.New(c, redisstore.Prefix(redisPrefix))
	m := lease.NewManager(s)
	locker := redislock.New(c)
	mName, sName := benchName(b)+"m", benchName(b)+"s"
	lKey := redisPrefix + "redislock:" + benchName(b)
	const owner = "0123456789abcdef0123456789abcdef"
	ops := []func(){
		func() { // manager
			l, err := m.Acquire(ctx, mName, lease.TTL(10*time.Second))
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		},
		func() { // store
			if _, ok, err := s.Acquire(ctx, sName, owner, 10*time.Second); !ok || err != nil {
				b.Fatal(ok, err)
			}
			if ok, err := s.Release(ctx, sName, owner); !ok || err != nil {
				b.Fatal(ok, err)
			}
		},
		func() { // redislock
			l, err := locker.Obtain(ctx, lKey, 10*time.Second, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		},
	}
	interleaved(b, ops, []string{"manager", "store", "redislock"})
}

// BenchmarkRefusalFloor: the table store's refused acquire of a held
// name and the one-statement upsert's (upsertAcquire, the store's acquire
// before refusals became reads), one worker each, interleaved as
// BenchmarkRedisFloor is: the bound of issue 27 (MariaDB: <= 1.2x) is on
// lockplugin/upsert. BenchmarkRefusal measures the two one after the
// other, and with 16 workers.
func BenchmarkRefusalFloor(b *testing.B) {
	for _, kind := range []string{testdb.MySQL, testdb.Postgres, testdb.SQLite} {
		b.Run(kind, func(b *testing.B) {
			db, pool := countedDB(b, kind)
			tableStore(b, db) // skips where refused
			s, err := sqlstore.New(db, sqlstore.Table(table), sqlstore.Retention(-1))
			if err != nil {
				b.Fatal(err)
			}
			upsert := upsertStoreOn(b, db, pool)
			ctx := context.Background()
			name := heldName(b, s)
			refuse := func(st lease.Store, owner string) func() {
				return func() {
					if _, ok, err := st.Acquire(ctx, name, owner, 10*time.Second); ok || err != nil {
						b.Fatalf("a held name: granted %v, %v", ok, err)
					}
				}
			}
			interleaved(b, []func(){refuse(s, "bench-owner-lockplugin"), refuse(upsert, "bench-owner-upsert")},
				[]string{"lockplugin", "upsert"})
		})
	}
}

// interleaved runs b.N calls of each of ops (the last one the baseline),
// in blocks of 50 taking turns within one process, the order reversed
// every other round, so that a loaded machine's swings hit them all
// alike. It reports, for each op but the baseline, the median over the
// rounds of its time divided by the baseline's in the same round
// ("<name>/<baseline>"), and for each op its median time and its
// allocations per call. Use -benchtime 2000x or more for 40 rounds.
func interleaved(b *testing.B, ops []func(), names []string) {
	const block = 50
	last := len(ops) - 1
	ratios := make([][]float64, last)
	per := make([][]float64, len(ops))
	b.ResetTimer()
	for round, done := 0, 0; done < b.N; round++ {
		n := min(block, b.N-done)
		d := make([]time.Duration, len(ops))
		for j := range ops {
			i := j
			if round%2 == 1 {
				i = last - j
			}
			t0 := time.Now()
			for range n {
				ops[i]()
			}
			d[i] = time.Since(t0)
		}
		done += n
		for i := range per {
			per[i] = append(per[i], float64(d[i].Nanoseconds())/float64(n))
		}
		for i := range ratios {
			ratios[i] = append(ratios[i], float64(d[i])/float64(d[last]))
		}
	}
	b.StopTimer()
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	for i := range ratios {
		b.ReportMetric(median(ratios[i]), names[i]+"/"+names[last])
	}
	for i := range per {
		b.ReportMetric(median(per[i]), names[i]+"-ns/op")
		b.ReportMetric(testing.AllocsPerRun(200, ops[i]), names[i]+"-allocs/op")
	}
	b.ReportMetric(float64(len(per[0])), "rounds")
}
