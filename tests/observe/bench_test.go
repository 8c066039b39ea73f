package observe_test

import (
	"context"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/integrations/otellock"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/observe"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

var noop = observe.Func(func(observe.Event) {})

// BenchmarkObserverLease is one Acquire and Release on the local store
// (the cheapest lease cycle, so the hook's share is the largest) with an
// Observer, beside the same cycle with none in the same run: a no-op
// observe.Func, and otellock over OpenTelemetry's no-op meter and tracer
// providers (telemetry compiled in but switched off).
func BenchmarkObserverLease(b *testing.B) {
	store, err := lease.NewLocalStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	otelNoop, err := otellock.New(otellock.MeterProvider(metricnoop.NewMeterProvider()), otellock.TracerProvider(tracenoop.NewTracerProvider()))
	if err != nil {
		b.Fatal(err)
	}
	cycle := func(b *testing.B, opts ...lease.ManagerOption) {
		m := lease.NewManager(store, opts...)
		ctx := context.Background()
		for i := 0; i < b.N; i++ {
			l, err := m.Acquire(ctx, "i17_bench", lease.TTL(lease.DefaultTTL))
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name string
		o    observe.Observer
	}{{"noop", noop}, {"otellock-noop-providers", otelNoop}} {
		b.Run(c.name, func(b *testing.B) {
			b.Run("lockplugin", func(b *testing.B) { cycle(b, lease.WithObserver(c.o)) })
			b.Run("baseline=unset", func(b *testing.B) { cycle(b) })
		})
	}
}

// BenchmarkI17ObserverAdvisory is one advisory Acquire and Release on
// PostgreSQL, with no Observer and with a no-op one.
func BenchmarkI17ObserverAdvisory(b *testing.B) {
	tg := testdb.Get(b, testdb.Postgres) // skips, or fails under CI, without one
	for _, c := range []struct {
		name string
		opts []lockplugin.Option
	}{{"unset", nil}, {"noop", []lockplugin.Option{lockplugin.WithObserver(noop)}}} {
		b.Run(c.name, func(b *testing.B) {
			db, err := gorm.Open(testdb.Dialector(testdb.Postgres, tg.DSN), &gorm.Config{Logger: logger.Discard})
			if err != nil {
				b.Fatal(err)
			}
			sqlDB, _ := db.DB()
			defer sqlDB.Close()
			if err := db.Use(lockplugin.New(c.opts...)); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				l, err := advisory.Acquire(ctx, db, "i17_bench")
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
