package otellock_test

import (
	"context"
	"testing"

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
