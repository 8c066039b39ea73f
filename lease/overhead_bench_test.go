package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// freeStore grants and releases every call at once: what is left of
// Acquire+Release is the Manager's own cost.
type freeStore struct{ honours bool }

func (freeStore) Acquire(context.Context, string, string, time.Duration) (int64, bool, error) {
	return 1, true, nil
}
func (freeStore) Release(context.Context, string, string) (bool, error) { return true, nil }
func (freeStore) Refresh(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}
func (s freeStore) HonoursContext() bool { return s.honours }

// BenchmarkManagerOverhead: Manager.Acquire + Lease.Release on a store
// that costs nothing, with the store call on a goroutine of its own
// (bounded abandon) and on the caller's (a store that honours contexts).
func BenchmarkManagerOverhead(b *testing.B) {
	for _, honours := range []bool{false, true} {
		name := "goroutine"
		if honours {
			name = "inline"
		}
		b.Run(name, func(b *testing.B) {
			m := lease.NewManager(freeStore{honours: honours})
			ctx := context.Background()
			b.ReportAllocs()
			for range b.N {
				l, err := m.Acquire(ctx, "overhead", lease.TTL(10*time.Second))
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
