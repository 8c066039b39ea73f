package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/internal/lockerr"
	"github.com/lockplugin/lockplugin/lease"
)

// TestNilOptionsIgnored: a nil Option or ManagerOption changes nothing,
// as everywhere in lockplugin, and an invalid value next to it is still
// reported by the call.
func TestNilOptionsIgnored(t *testing.T) {
	ctx := context.Background()
	m := lease.NewManager(newMem(), nil, lease.PollInterval(5*time.Millisecond), nil)
	if err := m.Do(ctx, "i18-nil-opt", noop, nil, lease.TTL(time.Minute), nil); err != nil {
		t.Fatalf("Do with nil options: %v", err)
	}
	l, err := m.Acquire(ctx, "i18-nil-opt", nil)
	if err != nil {
		t.Fatalf("Acquire with a nil option: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lease.NewManager(newMem(), nil, lease.CallTimeout(-1)).Do(ctx, "i18-nil-opt", noop); err == nil {
		t.Fatal("an invalid CallTimeout beside a nil option was not reported")
	}
	if err := m.Do(ctx, "i18-nil-opt", noop, nil, lease.WaitAtMost(-time.Second)); err == nil {
		t.Fatal("a negative WaitAtMost beside a nil option was not reported")
	}
}

// TestWaitAtMostAndBusy: without WaitAtMost, and with WaitAtMost(0), a held
// lease fails at once; a positive bound retries until it; every such
// answer matches ErrNotAcquired and the shared busy sentinel. The
// deprecated Wait is the same option.
func TestWaitAtMostAndBusy(t *testing.T) {
	ctx := context.Background()
	m := lease.NewManager(newMem(), lease.PollInterval(5*time.Millisecond))
	held, err := m.Acquire(ctx, "i18-wait")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	for _, tc := range []struct {
		name   string
		opts   []lease.Option
		waited bool
	}{
		{"no option", nil, false},
		{"WaitAtMost(0)", []lease.Option{lease.WaitAtMost(0)}, false},
		{"WaitAtMost(30ms)", []lease.Option{lease.WaitAtMost(30 * time.Millisecond)}, true},
		{"Wait(30ms)", []lease.Option{lease.Wait(30 * time.Millisecond)}, true},
	} {
		_, err := m.Acquire(ctx, "i18-wait", tc.opts...)
		var na *lease.NotAcquiredError
		if !errors.Is(err, lease.ErrNotAcquired) || !errors.Is(err, lockerr.ErrBusy) || !errors.As(err, &na) {
			t.Fatalf("%s: err = %v, want ErrNotAcquired and ErrBusy", tc.name, err)
		}
		if (na.Waited > 0) != tc.waited {
			t.Errorf("%s: waited %v, want waited = %v", tc.name, na.Waited, tc.waited)
		}
	}
}
