package holds

import (
	"context"
	"errors"
	"testing"
	"time"
)

func timeDuration(ns int64) time.Duration { return time.Duration(ns) }

// pgError looks like a pgx error to dialects.IsRetryable.
type pgError struct{ state string }

func (e pgError) Error() string    { return "SQLSTATE " + e.state }
func (e pgError) SQLState() string { return e.state }

func TestReplay(t *testing.T) {
	ctx := context.Background()
	deadlock, unique := pgError{"40P01"}, pgError{"23505"}
	cases := []struct {
		name     string
		failures int   // attempts that fail before one succeeds
		err      error // what they fail with
		calls    int
		wantErr  error
	}{
		{"success", 0, nil, 1, nil},
		{"two deadlocks then success", 2, deadlock, 3, nil},
		{"three deadlocks then success", 3, deadlock, 4, nil},
		{"deadlocks forever", 100, deadlock, 4, deadlock},
		{"not retryable", 100, unique, 1, unique},
		{"final", 100, &finalError{deadlock}, 1, deadlock},
	}
	for _, c := range cases {
		calls := 0
		err := replay(ctx, maxReplays, func() error {
			calls++
			if calls <= c.failures {
				return c.err
			}
			return nil
		})
		if calls != c.calls || !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
			t.Errorf("%s: %d calls, err %v; want %d calls, err %v", c.name, calls, err, c.calls, c.wantErr)
		}
		var fe *finalError
		if errors.As(err, &fe) {
			t.Errorf("%s: finalError leaked out: %v", c.name, err)
		}
	}
}

func TestReplayStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := replay(ctx, maxReplays, func() error { calls++; return pgError{"40001"} })
	if calls != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, pgError{"40001"}) {
		t.Fatalf("%d calls, %v", calls, err)
	}
}
