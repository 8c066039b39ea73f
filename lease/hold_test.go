package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// TestHoldAtLeast: a Release within the hold refreshes the lease to the
// time left (others are refused until then) and closes Done; a Release
// after the hold releases at once; a refresh the store refuses is a lost
// lease; a refresh that errs is returned, and Release can be called again.
func TestHoldAtLeast(t *testing.T) {
	ctx := context.Background()
	s := newMem()
	m := lease.NewManager(s, lease.PollInterval(5*time.Millisecond))

	l, err := m.Acquire(ctx, "h", lease.TTL(time.Minute), lease.HoldAtLeast(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done open after Release")
	}
	if _, err := m.Acquire(ctx, "h"); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("taken during the hold: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	l2, err := m.Acquire(ctx, "h", lease.WaitAtMost(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_ = l2.Release(ctx)

	// After the hold: released at once.
	l, _ = m.Acquire(ctx, "h2", lease.HoldAtLeast(time.Millisecond))
	time.Sleep(5 * time.Millisecond)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if l2, err = m.Acquire(ctx, "h2"); err != nil {
		t.Fatalf("after the hold: %v", err)
	}
	_ = l2.Release(ctx)

	// A refresh that errs, then succeeds.
	l, _ = m.Acquire(ctx, "h3", lease.HoldAtLeast(time.Second))
	fail := true
	s.refreshHook = func(string) (bool, error, bool) {
		if fail {
			return false, errors.New("injected"), true
		}
		return false, nil, false
	}
	if err := l.Release(ctx); err == nil || errors.Is(err, lease.ErrLeaseLost) {
		t.Fatalf("a failed hold refresh: %v", err)
	}
	fail = false
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release again: %v", err)
	}
	// A refresh the store refuses: lost.
	s.refreshHook = nil
	l, _ = m.Acquire(ctx, "h4", lease.HoldAtLeast(time.Second))
	s.refreshHook = func(string) (bool, error, bool) { return false, nil, true }
	if err := l.Release(ctx); !errors.Is(err, lease.ErrLeaseLost) {
		t.Fatalf("refused hold refresh: %v", err)
	}
	if _, err := m.Acquire(ctx, "x", lease.HoldAtLeast(-time.Second)); err == nil {
		t.Fatal("negative HoldAtLeast accepted")
	}
}
