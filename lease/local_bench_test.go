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

// honouringLocal is a LocalStore declared as honouring its contexts
// (lease.ContextHonourer), which LocalStore does not declare (a blocked
// counter lock or disk sync would not end with the context): for
// BenchmarkLocalSameNameRatio's inline figure only, what the Manager's
// goroutine per store call costs here.
type honouringLocal struct{ *lease.LocalStore }

func (honouringLocal) HonoursContext() bool { return true }

// BenchmarkLocalSameNameRatio is BenchmarkLocalSameName interleaved, for
// ratios that hold on a busy machine: each op is one round of the store
// alone, one through a Manager, one through a Manager calling the store
// inline (honouringLocal) and one of gofrs/flock, in rotating order. The
// rounds are timed in blocks of 50 ops; it reports the median over blocks
// of each time per round and of store/flock, manager/flock and
// inline/flock.
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
	im := lease.NewManager(honouringLocal{is})
	path := filepath.Join(dir, "raw.lock")
	rounds := []func(){
		func() { storeRound(b, ctx, s) },
		func() { managerRound(b, ctx, m, "bench-same-manager") },
		func() { managerRound(b, ctx, im, "bench-same-inline") },
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
	for v, unit := range []string{"store-ns/round", "manager-ns/round", "inline-ns/round", "flock-ns/round"} {
		b.ReportMetric(median(perRound[v]), unit)
	}
	for v, unit := range []string{"store/flock", "manager/flock", "inline/flock"} {
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
