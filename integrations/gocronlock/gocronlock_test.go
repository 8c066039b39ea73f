package gocronlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/integrations/gocronlock"
	"github.com/lockplugin/lockplugin/lease"
)

// A second Lock of a held job is refused; without HoldAtLeast the job is
// free at its Unlock, with it only after the hold.
func TestLocker(t *testing.T) {
	store, err := lease.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, hold := range []time.Duration{0, 300 * time.Millisecond} {
		l := gocronlock.NewLocker(lease.NewManager(store), gocronlock.HoldAtLeast(hold))
		start := time.Now()
		k, err := l.Lock(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Lock(ctx, "job"); !errors.Is(err, lease.ErrNotAcquired) {
			t.Fatalf("second Lock: %v", err)
		}
		if err := k.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		k2, err := l.Lock(ctx, "job")
		if k2 != nil {
			_ = k2.Unlock(ctx)
		}
		switch {
		case hold == 0 && err != nil:
			t.Fatalf("free at Unlock without a hold: %v", err)
		case hold > 0 && time.Since(start) < hold && !errors.Is(err, lease.ErrNotAcquired):
			t.Fatalf("taken during the hold: %v", err)
		}
		time.Sleep(hold + 50*time.Millisecond)
		k, err = l.Lock(ctx, "job")
		if hold > 0 && err != nil {
			t.Fatalf("after the hold: %v", err)
		}
		if k != nil {
			_ = k.Unlock(ctx)
		}
	}
}

// One of two Electors leads; after it resigns, the other does.
func TestElector(t *testing.T) {
	store, err := lease.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ea, _ := election.New(store, "leader")
	eb, _ := election.New(store, "leader")
	a, b := gocronlock.NewElector(ea), gocronlock.NewElector(eb)
	if err := a.IsLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.IsLeader(ctx); err != nil {
		t.Fatalf("the leader asked again: %v", err)
	}
	if err := b.IsLeader(ctx); !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("second candidate: %v", err)
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.IsLeader(ctx); err != nil {
		t.Fatalf("after the resignation: %v", err)
	}
	_ = b.Resign(ctx)
}
