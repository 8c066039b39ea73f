package lease

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKeyT struct{}

// TestBoundCtxReused: a pooled call context, put back after a call that
// returned in time, ends at its next call's bound, with its next caller's
// values and none of the last one's; one whose bound passed is never
// handed out again (its channel is closed for good).
func TestBoundCtxReused(t *testing.T) {
	for i := range 50 {
		parent := context.WithValue(context.Background(), ctxKeyT{}, i)
		c := getBoundCtx(parent, time.Now(), time.Now().Add(time.Hour))
		if c.Err() != nil || c.Value(ctxKeyT{}) != i {
			t.Fatalf("round %d: fresh call context: err %v, value %v", i, c.Err(), c.Value(ctxKeyT{}))
		}
		c.put()
		bound := time.Now().Add(20 * time.Millisecond)
		c2 := getBoundCtx(context.Background(), time.Now(), bound)
		if d, ok := c2.Deadline(); !ok || !d.Equal(bound) {
			t.Fatalf("round %d: deadline %v %v, want %v", i, d, ok, bound)
		}
		if v := c2.Value(ctxKeyT{}); v != nil {
			t.Fatalf("round %d: the last caller's value %v seen by the next", i, v)
		}
		select {
		case <-c2.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: a reused call context did not end at its bound", i)
		}
		if !errors.Is(c2.Err(), context.DeadlineExceeded) || time.Now().Before(bound) {
			t.Fatalf("round %d: ended with %v at %v before its bound %v", i, c2.Err(), time.Now(), bound)
		}
		c2.put() // fired: must not go back to the pool
		c3 := getBoundCtx(context.Background(), time.Now(), time.Now().Add(time.Hour))
		if c3 == c2 || c3.Err() != nil {
			t.Fatalf("round %d: an ended call context handed out again (err %v)", i, c3.Err())
		}
		select {
		case <-c3.Done():
			t.Fatalf("round %d: a handed-out call context is already done", i)
		default:
		}
		c3.put()
	}
}
