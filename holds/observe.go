package holds

import (
	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/observe"
)

// observeAcquired reports Acquire's answer to the plugin's Observer, if
// any: HoldGranted, or HoldFull when h is nil. Name is "table/id".
func observeAcquired(db *gorm.DB, res resource, h *Hold) {
	o := plugin.Observer(db)
	if o == nil {
		return
	}
	k := observe.HoldGranted
	if h == nil {
		k = observe.HoldFull
	}
	o.Observe(observe.Event{Mechanism: observe.Holds, Kind: k, Name: res.table + "/" + res.id})
}

// observeReleased reports a Release that succeeded: HoldReleased, with
// how long the hold lasted by the database clock when the row says.
func observeReleased(db *gorm.DB, h *Hold, err *error) {
	if *err != nil {
		return
	}
	o := plugin.Observer(db)
	if o == nil {
		return
	}
	e := observe.Event{Mechanism: observe.Holds, Kind: observe.HoldReleased, Name: h.ResourceType + "/" + h.ResourceID}
	if h.ReleasedAt != nil && !h.CreatedAt.IsZero() {
		e.Duration = h.ReleasedAt.Sub(h.CreatedAt)
	}
	o.Observe(e)
}
