package lease

import (
	"context"
	"errors"
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

// ContextHonourer is an optional interface of a Store whose every call
// ends by its context's deadline (go-redis with ContextTimeoutEnabled),
// cleanup included:
// a store that detaches a cleanup from the caller's context (a revoke, an
// undo, a rollback on a context of its own) must not declare it, or must
// answer false while it may. Manager then runs its store calls on the
// caller's goroutine under a context ending at the bound, instead of on a
// goroutine of their own that it stops waiting for at the bound: the
// bound then holds by the client, not by the Manager. A store that cannot
// promise that for every call, or answers false, keeps the goroutine and
// its bounded abandon. Either way, an answer that comes back after the
// bound is not given to the caller: it is handled as a call the Manager
// abandoned (an Acquire that took the lease is released).
//
// A store that declares it must also not use a call's context once the
// call has returned (go-redis does not): when the caller's context never
// ends, the Manager reuses the bounded context it made for one call in a
// later one, instead of allocating a context and a timer per call.
//
// The table store (sqlstore) does not declare it although pgx and
// go-sql-driver/mysql end a statement with its context: they do so by
// closing the connection, and with a short CallTimeout on a loaded
// machine each retry then spent its bound reconnecting (measured: a lost
// reply's Release timed out 21 times in a row). On the Manager's
// goroutine the abandoned statement finishes and keeps its connection.
type ContextHonourer interface {
	// HonoursContext reports whether every call of the store returns, one
	// way or another, by its context's deadline or cancellation.
	HonoursContext() bool
}

// honours reports whether store declares that its calls end with their
// context (ContextHonourer).
func honours(store Store) bool {
	h, ok := store.(ContextHonourer)
	return ok && h.HonoursContext()
}

// callInline is call for a store whose client honours its context: op
// runs on the caller's goroutine under a context that ends at bound;
// start is when the caller sent it (time.Now, read once by the caller). An
// answer that arrives when ctx has ended or bound has passed is handled as
// call handles an abandoned one: handed to late, and the caller gets
// ErrStoreTimeout with cut set, so that a store that does not keep its
// promise can delay the caller but never hand it a stale answer.
func callInline[T any](ctx context.Context, start, bound time.Time, op func(ctx context.Context) (T, error), late func(T, error)) (v T, err error, cut bool) {
	bctx := ctx
	var cancel context.CancelFunc
	var pooled *boundCtx
	if d, ok := ctx.Deadline(); !ok || d.After(bound) {
		if ctx.Done() == nil {
			// A context that never ends (Background, WithoutCancel): one
			// from the pool, instead of a context and a timer per call.
			pooled = getBoundCtx(ctx, start, bound)
			bctx = pooled
		} else {
			bctx, cancel = context.WithDeadline(ctx, bound)
		}
	}
	v, err = op(bctx)
	if cancel != nil {
		cancel()
	}
	if pooled != nil {
		pooled.put()
	}
	if ctx.Err() == nil && time.Now().Before(bound) {
		return v, ended(ctx, bound, start, err), false
	}
	if err == nil || !isCtxErr(err) {
		// The store answered (or failed on its own) only after the bound:
		// too late to use, as call would have abandoned it.
		if late != nil {
			late(v, err)
		}
		var zero T
		el := time.Since(start).Round(time.Millisecond)
		if cerr := ctx.Err(); cerr != nil {
			return zero, fmt.Errorf("%w before the context ended (after %v): %w", ErrStoreTimeout, el, cerr), true
		}
		return zero, fmt.Errorf("%w within %v", ErrStoreTimeout, el), true
	}
	// The client gave up at the bound, as it promised: its call is over.
	var zero T
	return zero, ended(ctx, bound, start, err), true
}

// isCtxErr reports whether err is a context's end, as a client that
// honours its context reports one.
func isCtxErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
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

// run is the bounded store call of m: on the caller's goroutine when m's
// store honours its context (callInline), else on a goroutine of its own
// (call).
func run[T any](m *Manager, ctx context.Context, bound time.Time, op func(ctx context.Context) (T, error), late func(T, error)) (T, error, bool) {
	if m.inline {
		return callInline(ctx, time.Now(), bound, op, late)
	}
	return call(ctx, bound, op, late)
}

// boundCtx is the context of an inline store call (callInline) whose
// caller's context never ends (its Done is nil): it ends at the call's
// bound, with context.DeadlineExceeded, on a timer of its own. Unlike a
// context.WithDeadline per call (a context, a timer and a channel
// allocated, and the timer added to and removed from the runtime's heap),
// it is kept in a pool with its timer and channel and re-armed for the
// next call once this one returned, unless it had ended: a store that
// declares ContextHonourer does not use a call's context once the call
// has returned.
type boundCtx struct {
	context.Context // the caller's, which never ends: its values

	timer *time.Timer

	mu       sync.Mutex
	deadline time.Time
	done     chan struct{}
	err      error
}

// boundCtxs are the boundCtx not in use, their timers stopped.
var boundCtxs sync.Pool

// getBoundCtx returns a boundCtx over parent (whose Done is nil) ending at
// bound; now is the time it is asked at.
func getBoundCtx(parent context.Context, now, bound time.Time) *boundCtx {
	c, _ := boundCtxs.Get().(*boundCtx)
	if c == nil {
		c = &boundCtx{done: make(chan struct{})}
		c.Context, c.deadline = parent, bound
		c.timer = time.AfterFunc(bound.Sub(now), c.fire)
		return c
	}
	c.mu.Lock()
	c.Context, c.deadline = parent, bound
	c.mu.Unlock()
	c.timer.Reset(bound.Sub(now))
	return c
}

// put returns c to the pool once its call has returned, unless its timer
// fired (its channel is closed for good: the garbage collector takes it).
func (c *boundCtx) put() {
	if !c.timer.Stop() {
		return
	}
	c.mu.Lock()
	c.Context = nil // keep no caller's values alive in the pool
	c.mu.Unlock()
	boundCtxs.Put(c)
}

// fire ends c at its deadline.
func (c *boundCtx) fire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = context.DeadlineExceeded
		close(c.done)
	}
}

// Deadline returns the call's bound.
func (c *boundCtx) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, true
}

// Done returns a channel closed at the call's bound.
func (c *boundCtx) Done() <-chan struct{} { return c.done }

// Err returns context.DeadlineExceeded once the bound has passed, nil
// before.
func (c *boundCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value returns the caller's context's value for key.
func (c *boundCtx) Value(key any) any {
	c.mu.Lock()
	parent := c.Context
	c.mu.Unlock()
	if parent == nil {
		return nil
	}
	return parent.Value(key)
}
