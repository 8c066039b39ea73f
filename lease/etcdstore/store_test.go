package etcdstore

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestSecondsRoundUp(t *testing.T) {
	s := New(nil)
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{
		{time.Millisecond, 2}, {time.Second, 2}, {2 * time.Second, 2}, {2*time.Second + time.Nanosecond, 3},
		{30 * time.Second, 30}, {90*time.Second + 500*time.Millisecond, 91},
	} {
		if got := s.seconds(tc.ttl); got != tc.want {
			t.Errorf("seconds(%v) = %d, want %d (rounded up, at least the 2 s minimum)", tc.ttl, got, tc.want)
		}
	}
	s = New(nil, MinTTL(5*time.Second))
	if got := s.seconds(time.Second); got != 5 {
		t.Errorf("with MinTTL(5s), seconds(1s) = %d, want 5", got)
	}
}

func TestInvalidOptionsReported(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		s    *Store
		want string
	}{
		{New(nil), "needs a client"},
		{New(nil, MinTTL(time.Millisecond)), "MinTTL"},
		{New(nil, nil), "needs a client"}, // a nil Option is ignored
		{New(nil, nil, MinTTL(0)), "MinTTL"},
	} {
		_, _, err := tc.s.Acquire(ctx, "n", "o", time.Second)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Acquire on a misconfigured store: %v, want an error naming %q", err, tc.want)
		}
		if err := tc.s.WaitFree(ctx, "n"); err == nil {
			t.Errorf("WaitFree on a misconfigured store: no error")
		}
	}
}
