package lease_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bsm/redislock"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
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
	const block = 50
	var ratios [2][]float64
	var per [3][]float64
	b.ResetTimer()
	for round, done := 0, 0; done < b.N; round++ {
		n := min(block, b.N-done)
		var d [3]time.Duration
		for j := range ops {
			i := j
			if round%2 == 1 {
				i = len(ops) - 1 - j
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
		ratios[0] = append(ratios[0], float64(d[0])/float64(d[2]))
		ratios[1] = append(ratios[1], float64(d[1])/float64(d[2]))
	}
	b.StopTimer()
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	b.ReportMetric(median(ratios[0]), "manager/redislock")
	b.ReportMetric(median(ratios[1]), "store/redislock")
	for i, unit := range []string{"manager-ns/op", "store-ns/op", "redislock-ns/op"} {
		b.ReportMetric(median(per[i]), unit)
	}
	for i, unit := range []string{"manager-allocs/op", "store-allocs/op", "redislock-allocs/op"} {
		b.ReportMetric(testing.AllocsPerRun(200, ops[i]), unit)
	}
	b.ReportMetric(float64(len(ratios[0])), "rounds")
}
