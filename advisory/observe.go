package advisory

import (
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/observe"
)

// observed is what a held Lock remembers for its Released event.
type observed struct {
	o  observe.Observer
	at time.Time
}

// observeAcquire runs acquire (Acquire's and With's) and reports it to
// the plugin's Observer, if db's plugin has one: WaitStarted, WaitEnded
// with the outcome, Held.
func observeAcquire(db *gorm.DB, name string, opts []Option, acquire func() (*Lock, error)) (*Lock, error) {
	o := plugin.Observer(db)
	if o == nil {
		return acquire()
	}
	o.Observe(observe.Event{Mechanism: observe.Advisory, Kind: observe.WaitStarted, Name: name})
	start := time.Now()
	l, err := acquire()
	e := observe.Event{Mechanism: observe.Advisory, Kind: observe.WaitEnded, Name: name, Duration: time.Since(start), Err: err}
	switch {
	case err == nil:
		e.Outcome = observe.Acquired
	case errors.Is(err, ErrTimeout):
		e.Outcome = observe.Timeout
		if bo, berr := buildOptions(opts); berr == nil && bo.wait.tryOnce() {
			e.Outcome = observe.Busy
		}
	default:
		e.Outcome = observe.Error
	}
	o.Observe(e)
	if err == nil {
		l.obs = &observed{o: o, at: time.Now()}
		o.Observe(observe.Event{Mechanism: observe.Advisory, Kind: observe.Held, Name: name})
	}
	return l, err
}

// released reports a Release (Err is its error, if any: the lock is
// released either way, by the statement or by closing its session).
func (b *observed) released(name string, err *error) {
	if b == nil {
		return
	}
	b.o.Observe(observe.Event{Mechanism: observe.Advisory, Kind: observe.Released, Name: name, Duration: time.Since(b.at), Err: *err})
}
