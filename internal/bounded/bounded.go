// Package bounded waits a bounded time for a call that takes no context
// (GORM's gorm.Open asks the MySQL server its version with none).
package bounded

import "time"

// Within runs fn and waits at most d for it. When fn returns in time, its
// results are Within's, with ok true. Otherwise Within returns ok false at
// once and leaves fn to finish on its own; when it does, abandon gets its
// result, to close what it opened.
func Within[T any](d time.Duration, fn func() (T, error), abandon func(T, error)) (v T, ok bool, err error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn()
		done <- result{v, err}
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.v, true, r.err
	case <-timer.C:
		go func() {
			r := <-done
			abandon(r.v, r.err)
		}()
		var zero T
		return zero, false, nil
	}
}
