package advisory

import (
	"fmt"
	"time"
)

// Option configures one acquisition.
type Option func(*options)

type options struct {
	wait wait
	err  error
}

// Timeout bounds how long an acquisition waits for a lock that another
// session holds. Without it the wait is indefinite (bounded only by the
// context); Timeout(0) tries once and gives up at once; a positive d waits
// at most d (MySQL and MariaDB wait whole seconds, rounding up; Oracle too).
// A negative d is an error.
func Timeout(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.err = fmt.Errorf("advisory: negative timeout %v", d)
			return
		}
		o.wait = wait{d: d}
	}
}

func buildOptions(opts []Option) (options, error) {
	o := options{wait: wait{forever: true}}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o, o.err
}

// wait is how long an acquisition may wait: indefinitely, not at all, or at
// most d.
type wait struct {
	forever bool
	d       time.Duration
}

// tryOnce reports whether the acquisition gives up at once.
func (w wait) tryOnce() bool { return !w.forever && w.d <= 0 }

// ceil returns d in whole units, rounded up, at most max.
func (w wait) ceil(unit time.Duration, max int64) int64 {
	n := int64(w.d / unit)
	if w.d%unit != 0 {
		n++
	}
	if n > max {
		n = max
	}
	return n
}
