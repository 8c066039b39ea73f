package advisory

import (
	"fmt"
	"time"
)

// Option configures one acquisition. A nil Option is ignored; an invalid
// value is returned as an error by the call it is passed to.
type Option func(*options)

type options struct {
	wait wait
	err  error
}

// WaitAtMost bounds how long an acquisition waits for a lock that another
// session holds: at most d, after which it fails with an error matching
// ErrTimeout (and lockplugin.ErrBusy). Without it the wait is indefinite
// (bounded only by the context); WaitAtMost(0) tries once and gives up at
// once; a positive d waits at most d (MySQL and MariaDB wait whole seconds,
// rounding up; Oracle too). A negative d is an error returned by the call.
func WaitAtMost(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.err = fmt.Errorf("advisory: WaitAtMost must not be negative, got %v", d)
			return
		}
		o.wait = wait{d: d}
	}
}

// Timeout is WaitAtMost.
//
// Deprecated: use WaitAtMost, the name every lockplugin mechanism uses for
// its wait.
func Timeout(d time.Duration) Option { return WaitAtMost(d) }

func buildOptions(opts []Option) (options, error) {
	if len(opts) == 0 {
		return options{wait: wait{forever: true}}, nil
	}
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
