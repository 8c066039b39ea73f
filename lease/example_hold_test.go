package lease_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// A fast job scheduled on several nodes keeps its name for at least a
// second, so that a node whose timer fires a little later does not run
// the same occurrence again.
func ExampleHoldAtLeast() {
	dir, _ := os.MkdirTemp("", "hold-example")
	defer os.RemoveAll(dir)
	store, _ := lease.NewLocalStore(dir)
	m := lease.NewManager(store)
	ctx := context.Background()

	l, _ := m.Acquire(ctx, "hourly-sync", lease.HoldAtLeast(time.Second))
	// ... a job that takes 10 ms ...
	_ = l.Release(ctx) // kept until a second after the acquire

	_, err := m.Acquire(ctx, "hourly-sync") // a late node
	fmt.Println(errors.Is(err, lease.ErrNotAcquired))
	// Output: true
}
