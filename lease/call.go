package lease

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// call runs one store operation and returns when it returns or when ctx
// ends or bound passes, whichever comes first, so that no store call can
// hold a caller past its deadline whatever the store's client does with
// its context (a go-redis client without ContextTimeoutEnabled ignores
// context deadlines, for one).
//
// op runs on its own goroutine with a context that ends at bound. When
// call stops waiting for it, that goroutine lives on until op returns (a
// client's own timeouts end it: go-redis's read timeout, a database
// driver's); its result is then handed to late, if not nil, instead of
// the caller, and dropped. cut reports that call stopped waiting; err then
// matches ErrStoreTimeout, and the context's error when ctx ended. An error
// from op after the bound passed matches ErrStoreTimeout too.
func call[T any](ctx context.Context, bound time.Time, op func(ctx context.Context) (T, error), late func(T, error)) (v T, err error, cut bool) {
	start := time.Now()
	bctx, cancel := context.WithDeadline(ctx, bound)
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	var mu sync.Mutex
	abandoned := false
	go func() {
		v, err := op(bctx)
		mu.Lock()
		gone := abandoned
		if !gone {
			ch <- result{v, err}
		}
		mu.Unlock()
		cancel() // only now: the caller must find the answer once bctx ends
		if gone && late != nil {
			late(v, err)
		}
	}()
	select {
	case r := <-ch:
		cancel()
		return r.v, ended(ctx, bound, start, r.err), false
	case <-bctx.Done():
	}
	mu.Lock()
	select {
	case r := <-ch: // it answered just as the bound passed: take the answer
		mu.Unlock()
		cancel()
		return r.v, ended(ctx, bound, start, r.err), false
	default:
	}
	abandoned = true
	mu.Unlock()
	cancel()
	var zero T
	el := time.Since(start).Round(time.Millisecond)
	if cerr := ctx.Err(); cerr != nil {
		return zero, fmt.Errorf("%w before the context ended (after %v): %w", ErrStoreTimeout, el, cerr), true
	}
	return zero, fmt.Errorf("%w within %v", ErrStoreTimeout, el), true
}

// earliest returns the earliest of the non-zero times.
func earliest(ts ...time.Time) time.Time {
	var e time.Time
	for _, t := range ts {
		if !t.IsZero() && (e.IsZero() || t.Before(e)) {
			e = t
		}
	}
	return e
}

// ended marks an error from a store call that returned after ctx ended or
// bound passed (most likely because of it) as ErrStoreTimeout, keeping
// the store's error.
func ended(ctx context.Context, bound, start time.Time, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("%w before the context ended: %w (%w)", ErrStoreTimeout, err, ctx.Err())
	case !time.Now().Before(bound):
		return fmt.Errorf("%w within %v: %w", ErrStoreTimeout, bound.Sub(start).Round(time.Millisecond), err)
	}
	return err
}
