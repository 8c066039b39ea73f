//go:build unix

package lease

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestLocalCounterWaitEndsWithContext: the directory's fence counter is
// locked by another process (stopped while it held it, say) and stays
// locked. An Acquire under a 200 ms deadline, through the store and
// through a Manager (which calls the store inline: LocalStore declares
// ContextHonourer), returns by its deadline with the context's error and
// leaves the name free; once the counter is free again the name is taken.
// A blocking flock on the counter, as before, would hold both calls for as
// long as the other process holds it.
func TestLocalCounterWaitEndsWithContext(t *testing.T) {
	dir := t.TempDir()
	s, err := NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !NewManager(s).inline {
		t.Fatal("the Manager does not call the local store inline")
	}
	unlock := otherProcess(t, filepath.Join(dir, counterFile))
	for _, c := range []struct {
		what string
		do   func(ctx context.Context) error
	}{
		{"store", func(ctx context.Context) error {
			_, _, err := s.Acquire(ctx, "order-1", "o1", time.Minute)
			return err
		}},
		{"Manager", func(ctx context.Context) error {
			_, err := NewManager(s).Acquire(ctx, "order-1")
			return err
		}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		err := c.do(ctx)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: Acquire with the counter held elsewhere: %v, want the context's deadline", c.what, err)
		}
		if took > time.Second {
			t.Errorf("%s: Acquire returned %v after its 200 ms deadline", c.what, took)
		}
		t.Logf("%s: %v after %v", c.what, err, took.Round(time.Millisecond))
	}
	unlock()
	if _, ok, err := s.Acquire(context.Background(), "order-1", "o2", time.Minute); !ok || err != nil {
		t.Fatalf("after the counter was let go: ok %v, %v; the name was left taken", ok, err)
	}
	if ok, err := s.Release(context.Background(), "order-1", "o2"); !ok || err != nil {
		t.Fatalf("Release: ok %v, %v", ok, err)
	}
}
