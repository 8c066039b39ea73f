package lease_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/lockplugin/lockplugin/lease"
)

// BenchmarkLocalSameName: one acquire and release of the same name, on
// the LocalStore alone (store), through a Manager on it (manager), and
// with gofrs/flock on one file (baseline=gofrs-flock), for a profile of
// each.
func BenchmarkLocalSameName(b *testing.B) {
	ctx := context.Background()
	b.Run("store", func(b *testing.B) {
		s, err := lease.NewLocalStore(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.ReportAllocs()
		for range b.N {
			storeRound(b, ctx, s)
		}
	})
	b.Run("manager", func(b *testing.B) {
		s, err := lease.NewLocalStore(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		m := lease.NewManager(s)
		b.ReportAllocs()
		for range b.N {
			managerRound(b, ctx, m, "bench-same-manager")
		}
	})
	b.Run("baseline=gofrs-flock", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "raw.lock")
		b.ReportAllocs()
		for range b.N {
			flockRound(b, path)
		}
	})
}

// plainLocal is a LocalStore seen as a bare lease.Store, without its
// HonoursContext (lease.ContextHonourer): a Manager on it runs each store
// call on a goroutine of its own and abandons it at the bound, as it does
// for a store that does not honour its contexts. For
// BenchmarkLocalSameNameRatio: what that goroutine per call costs here.
type plainLocal struct{ lease.Store }

// BenchmarkLocalSameNameRatio is BenchmarkLocalSameName interleaved, for
// ratios that hold on a busy machine: each op is one round of the store
// alone, one through a Manager (which calls the store on the caller's
// goroutine: LocalStore honours its contexts), one through a Manager with
// a goroutine per store call (plainLocal) and one of gofrs/flock, in
// rotating order. The rounds are timed in blocks of 50 ops; it reports the
// median over blocks of each time per round and of store/flock,
// manager/flock and goroutine/flock.
func BenchmarkLocalSameNameRatio(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	s, err := lease.NewLocalStore(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ms, err := lease.NewLocalStore(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ms.Close()
	m := lease.NewManager(ms)
	is, err := lease.NewLocalStore(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer is.Close()
	gm := lease.NewManager(plainLocal{is})
	path := filepath.Join(dir, "raw.lock")
	rounds := []func(){
		func() { storeRound(b, ctx, s) },
		func() { managerRound(b, ctx, m, "bench-same-manager") },
		func() { managerRound(b, ctx, gm, "bench-same-goroutine") },
		func() { flockRound(b, path) },
	}
	const block = 50
	var spent [4]time.Duration
	var perRound [4][]float64
	var ratios [3][]float64
	closeBlock := func(n int) {
		for v := range spent {
			perRound[v] = append(perRound[v], float64(spent[v].Nanoseconds())/float64(n))
		}
		for v := range ratios {
			ratios[v] = append(ratios[v], spent[v].Seconds()/spent[3].Seconds())
		}
		spent = [4]time.Duration{}
	}
	b.ResetTimer()
	for i := range b.N {
		for k := range rounds {
			v := (i + k) % len(rounds)
			t0 := time.Now()
			rounds[v]()
			spent[v] += time.Since(t0)
		}
		if (i+1)%block == 0 {
			closeBlock(block)
		}
	}
	b.StopTimer()
	if len(ratios[0]) == 0 { // fewer ops than a block
		closeBlock(b.N)
	}
	for v, unit := range []string{"store-ns/round", "manager-ns/round", "goroutine-ns/round", "flock-ns/round"} {
		b.ReportMetric(median(perRound[v]), unit)
	}
	for v, unit := range []string{"store/flock", "manager/flock", "goroutine/flock"} {
		b.ReportMetric(median(ratios[v]), unit)
	}
}

// median returns the median of xs (sorted in place).
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func storeRound(b *testing.B, ctx context.Context, s *lease.LocalStore) {
	if _, ok, err := s.Acquire(ctx, "bench-same", "o", 0); !ok || err != nil {
		b.Fatal(ok, err)
	}
	if ok, err := s.Release(ctx, "bench-same", "o"); !ok || err != nil {
		b.Fatal(ok, err)
	}
}

func managerRound(b *testing.B, ctx context.Context, m *lease.Manager, name string) {
	l, err := m.Acquire(ctx, name, lease.TTL(10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		b.Fatal(err)
	}
}

func flockRound(b *testing.B, path string) {
	f := flock.New(path)
	if ok, err := f.TryLock(); !ok || err != nil {
		b.Fatal(ok, err)
	}
	if err := f.Unlock(); err != nil {
		b.Fatal(err)
	}
}
