package observe_test

import (
	"context"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/observe"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

var noop = observe.Func(func(observe.Event) {})

// BenchmarkI17ObserverLease is one Acquire and Release on the local store
// (the cheapest lease cycle, so the hook's share is the largest), with no
// Observer and with a no-op one, in the same run.
func BenchmarkI17ObserverLease(b *testing.B) {
	store, err := lease.NewLocalStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts []lease.ManagerOption
	}{{"unset", nil}, {"noop", []lease.ManagerOption{lease.WithObserver(noop)}}} {
		b.Run(c.name, func(b *testing.B) {
			m := lease.NewManager(store, c.opts...)
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
