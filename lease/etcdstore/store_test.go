package etcdstore

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
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
		{New(nil, MaxInFlight(-1)), "MaxInFlight"},
	} {
		_, _, err := tc.s.Acquire(ctx, "n", "o", time.Second)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Acquire on a misconfigured store: %v, want an error naming %q", err, tc.want)
		}
		if err := tc.s.WaitFree(ctx, "n"); err == nil {
			t.Errorf("WaitFree on a misconfigured store: no error")
		}
		if _, _, ok, err := tc.s.AcquireQueued(ctx, "n", "o", time.Second); ok || err == nil {
			t.Errorf("AcquireQueued on a misconfigured store: ok=%v err=%v, want an error", ok, err)
		}
	}
}

// TestReservedNamesRefused: a name starting with NUL could read as a
// wait-queue key; it is refused before any request (the store has a
// client that is never dialled).
func TestReservedNamesRefused(t *testing.T) {
	s := &Store{client: new(clientv3.Client), prefix: DefaultPrefix, minTTL: DefaultMinTTL}
	ctx := context.Background()
	if _, _, err := s.Acquire(ctx, "\x00q/1:a/x", "o", time.Second); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("Acquire of a NUL-led name: %v, want the reserved-name error", err)
	}
	if _, _, _, err := s.AcquireQueued(ctx, "\x00x", "o", time.Second); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("AcquireQueued of a NUL-led name: %v, want the reserved-name error", err)
	}
}

// TestQueueDirsPrefixFree: the queue of a name never holds the queue of a
// longer name that starts with it.
func TestQueueDirsPrefixFree(t *testing.T) {
	s := New(nil)
	a, ab := s.queueDir("a"), s.queueDir("a/b")
	if strings.HasPrefix(ab, a) {
		t.Errorf("queue dir %q holds %q", a, ab)
	}
}
