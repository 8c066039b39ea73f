package lease_test

import (
	"context"
	"fmt"
	"os"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/observe"
)

// An Observer sees every acquisition, hold and release of a Manager's
// leases, synchronously.
func ExampleWithObserver() {
	dir, _ := os.MkdirTemp("", "lease-observe-")
	defer os.RemoveAll(dir)
	store, _ := lease.NewLocalStore(dir)
	m := lease.NewManager(store, lease.WithObserver(observe.Func(func(e observe.Event) {
		if e.Kind == observe.WaitEnded {
			fmt.Println(e.Mechanism, e.Kind, e.Name, e.Outcome)
			return
		}
		fmt.Println(e.Mechanism, e.Kind, e.Name)
	})))
	ctx := context.Background()
	l, _ := m.Acquire(ctx, "report")
	_, _ = m.Acquire(ctx, "report") // someone else holds it
	_ = l.Release(ctx)
	// Output:
	// lease wait_started report
	// lease wait_ended report acquired
	// lease held report
	// lease wait_started report
	// lease wait_ended report busy
	// lease released report
}
