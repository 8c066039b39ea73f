// Package ctxjoin joins the two contexts a lockplugin call can be given: the
// explicit ctx argument and the *gorm.DB's own (db.WithContext). The usual
// idiom passes both, `holds.Acquire(ctx, db.WithContext(r.Context()), ...)`,
// and a caller who cancels either one expects the call to stop.
package ctxjoin

import (
	"context"

	"gorm.io/gorm"
)

// Join returns a context that is done when ctx or db's statement context is
// done, whichever comes first, with the earlier of their deadlines and the
// cause of whichever ended first. Values come from ctx. When db carries no
// context of its own, or the same one, Join returns ctx itself. The returned
// CancelFunc releases the join's resources and must be called.
func Join(ctx context.Context, db *gorm.DB) (context.Context, context.CancelFunc) {
	var other context.Context
	if db != nil && db.Statement != nil {
		other = db.Statement.Context
	}
	return Contexts(ctx, other)
}

// Contexts is Join for two plain contexts; other may be nil.
func Contexts(ctx, other context.Context) (context.Context, context.CancelFunc) {
	if other == nil || other == ctx || other.Done() == nil {
		return ctx, func() {}
	}
	joined, cancel := context.WithCancelCause(ctx)
	if other.Err() != nil {
		// AfterFunc would cancel from another goroutine, a moment later:
		// a context that has already ended must show at once.
		cancel(context.Cause(other))
		return joined, func() { cancel(context.Canceled) }
	}
	stop := context.AfterFunc(other, func() { cancel(context.Cause(other)) })
	cancelDeadline := func() {}
	if dl, ok := other.Deadline(); ok {
		if mine, ok := ctx.Deadline(); !ok || dl.Before(mine) {
			joined, cancelDeadline = context.WithDeadlineCause(joined, dl, context.DeadlineExceeded)
		}
	}
	return joined, func() {
		stop()
		cancelDeadline()
		cancel(context.Canceled)
	}
}
