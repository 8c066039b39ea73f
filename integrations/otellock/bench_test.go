package otellock_test

import (
	"context"
	"slices"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/lockplugin/lockplugin/integrations/otellock"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/observe"
)

// BenchmarkLeaseCycle is one Acquire and Release on the local store with
// no Observer, a no-op one, this adapter over OpenTelemetry's no-op
// providers, and this adapter over the SDK (manual reader, span
// recorder), in the same run.
func BenchmarkLeaseCycle(b *testing.B) {
	store, err := lease.NewLocalStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	h := newHarness(&testing.T{})
	// This adapter over OpenTelemetry's no-op providers: what it costs
	// where telemetry is compiled in but switched off.
	noopObs, err := otellock.New(otellock.MeterProvider(metricnoop.NewMeterProvider()), otellock.TracerProvider(tracenoop.NewTracerProvider()))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    observe.Observer
	}{{"unset", nil}, {"noop", observe.Func(func(observe.Event) {})}, {"otel-noop-providers", noopObs}, {"otel", h.obs}} {
		b.Run(c.name, func(b *testing.B) {
			var opts []lease.ManagerOption
			if c.o != nil {
				opts = append(opts, lease.WithObserver(c.o))
			}
			m := lease.NewManager(store, opts...)
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				l, err := m.Acquire(ctx, "i17_bench", lease.TTL(lease.DefaultTTL))
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLeaseCycleInterleaved is BenchmarkLeaseCycle's "unset" and
// "otel-noop-providers" in one process, interleaved in blocks of 50
// cycles (the order reversed every other round), so that a loaded
// machine's swings hit both alike: it reports the median over the rounds
// of the adapter's time per cycle divided by the unobserved one's in the
// same round, and each one's allocations per cycle. b.N cycles of each
// are run; use -benchtime 2000x or more for at least 40 rounds.
func BenchmarkLeaseCycleInterleaved(b *testing.B) {
	store, err := lease.NewLocalStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	noopObs, err := otellock.New(otellock.MeterProvider(metricnoop.NewMeterProvider()), otellock.TracerProvider(tracenoop.NewTracerProvider()))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cycle := func(m *lease.Manager, name string) func() {
		return func() {
			l, err := m.Acquire(ctx, name, lease.TTL(lease.DefaultTTL))
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	ops := []func(){
		cycle(lease.NewManager(store), "i27_unset"),
		cycle(lease.NewManager(store, lease.WithObserver(noopObs)), "i27_noop"),
	}
	const block = 50
	var ratios []float64
	b.ResetTimer()
	for round, done := 0, 0; done < b.N; round++ {
		n := min(block, b.N-done)
		var d [2]time.Duration
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
		ratios = append(ratios, float64(d[1])/float64(d[0]))
	}
	b.StopTimer()
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "otel-noop/unset")
	b.ReportMetric(testing.AllocsPerRun(200, ops[0]), "unset-allocs/op")
	b.ReportMetric(testing.AllocsPerRun(200, ops[1]), "otel-noop-allocs/op")
	b.ReportMetric(float64(len(ratios)), "rounds")
}
