package lockplugin

import (
	"errors"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/internal/fence"
	"github.com/lockplugin/lockplugin/internal/version"
	"github.com/lockplugin/lockplugin/observe"
)

// WithObserver sets the Observer that every lockplugin mechanism used
// through this plugin's *gorm.DB reports to (package observe): version and
// fence conflicts, RetryOnConflict retries, advisory locks and holds. A
// lease.Manager has its own: lease.WithObserver. Without it (or with nil)
// nothing is reported and nothing is spent.
func WithObserver(o observe.Observer) Option {
	return func(c *config) { c.observer = o }
}

// Observer returns the Observer set with WithObserver, or nil.
func (p *Plugin) Observer() observe.Observer {
	if p == nil {
		return nil
	}
	return p.cfg.observer
}

// observeCallback is the name of the callbacks that report conflicts.
const observeCallback = "lockplugin:observe"

// registerObserver reports a write that ended in ErrConcurrency or
// ErrStaleFence. It runs after every other update and delete callback (GORM
// runs them all; each checks db.Error), so it sees the error that the
// version and fence callbacks set. Registered only with an Observer.
func (p *Plugin) registerObserver(db *gorm.DB) error {
	o := p.cfg.observer
	if o == nil {
		return nil
	}
	report := func(tx *gorm.DB) {
		err := tx.Error
		if err == nil {
			return
		}
		m := observe.Version
		switch {
		case errors.Is(err, fence.ErrStaleFence):
			m = observe.Fence
		case errors.Is(err, version.ErrConcurrency):
		default:
			return
		}
		name := ""
		if tx.Statement != nil {
			name = tx.Statement.Table
		}
		o.Observe(observe.Event{Mechanism: m, Kind: observe.Conflict, Name: name, Err: err})
	}
	if err := db.Callback().Update().After("*").Register(observeCallback, report); err != nil {
		return err
	}
	return db.Callback().Delete().After("*").Register(observeCallback, report)
}

// observeRetries wraps RetryOnConflict's fn so that every attempt after
// the first is reported, with the error that ended the one before (nil
// when fn succeeded and its COMMIT failed).
func observeRetries(o observe.Observer, db *gorm.DB, fn func(tx *gorm.DB) error) func(tx *gorm.DB) error {
	attempt := 0
	var last error
	return func(tx *gorm.DB) error {
		attempt++
		if attempt > 1 {
			name := ""
			if db.Statement != nil {
				name = db.Statement.Table
			}
			o.Observe(observe.Event{Mechanism: observe.Retry, Kind: observe.Retried, Name: name, Attempt: attempt, Err: last})
		}
		last = fn(tx)
		return last
	}
}
