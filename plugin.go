// Package lockplugin is a GORM plugin that defends applications against lost
// updates and double work: row locks rendered correctly for each database,
// version columns that turn stale writes into errors, and, in its
// subpackages, advisory locks, lease locks and capacity holds.
//
// Register it once:
//
//	// fragment: needs db *gorm.DB
//	if err := db.Use(lockplugin.New()); err != nil {
//		return err
//	}
//
// It never silently drops a lock it was asked for: where a database cannot
// do what a query asks, the query fails with ErrUnsupported before any SQL is
// sent.
package lockplugin

import (
	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/internal/clauses"
	"github.com/lockplugin/lockplugin/internal/fence"
	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/internal/version"
	"github.com/lockplugin/lockplugin/observe"
)

// PluginName is the name the plugin registers under in gorm.Config.Plugins.
const PluginName = plugin.Name

// Plugin is the GORM plugin returned by New. A zero Plugin, and a nil
// *Plugin, are the plugin with no options, as New() returns it.
type Plugin struct {
	cfg config
}

type config struct {
	allowOutsideTransaction bool
	sqliteWriterLock        bool
	strictVersion           bool
	observer                observe.Observer // WithObserver: observe.go
}

// Option configures the plugin. A nil Option is ignored.
type Option func(*config)

// AllowLocksOutsideTransaction turns off the ErrNotInTransaction check.
// A locking read outside a transaction holds its locks only until the
// statement ends, which protects nothing; use this only when transactions
// are managed below GORM (for example with BEGIN sent through a pinned
// connection).
func AllowLocksOutsideTransaction() Option {
	return func(c *config) { c.allowOutsideTransaction = true }
}

// New returns the plugin. Register it with db.Use.
func New(opts ...Option) *Plugin {
	p := &Plugin{}
	for _, o := range opts {
		if o != nil {
			o(&p.cfg)
		}
	}
	return p
}

// Name returns "lockplugin".
func (p *Plugin) Name() string { return PluginName }

// Initialize registers the plugin's callbacks and clause builders on db.
func (p *Plugin) Initialize(db *gorm.DB) error {
	if p == nil {
		p = &Plugin{}
	}
	if err := clauses.Register(db, clauses.Config{AllowOutsideTransaction: p.cfg.allowOutsideTransaction, SQLiteWriterLock: p.cfg.sqliteWriterLock}); err != nil {
		return err
	}
	if err := version.Register(db, version.Config{Strict: p.cfg.strictVersion}); err != nil {
		return err
	}
	if err := fence.Register(db); err != nil { // fenced writes: fence.go
		return err
	}
	return p.registerObserver(db) // observe.go
}
