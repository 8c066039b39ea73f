package plugin

import (
	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/observe"
)

// observed is implemented by the root plugin.
type observed interface{ Observer() observe.Observer }

// Observer returns the Observer set on db's plugin (lockplugin.WithObserver),
// or nil: without one, callers skip building events altogether.
func Observer(db *gorm.DB) observe.Observer {
	if db == nil || db.Config == nil {
		return nil
	}
	if p, ok := db.Plugins[Name].(observed); ok {
		return p.Observer()
	}
	return nil
}
