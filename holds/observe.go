package holds

import (
	"context"
	"database/sql"
	"time"

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

// observeForced reports the holds ForceRelease ended, one event each.
func observeForced(db *gorm.DB, name string, n int64) {
	o := plugin.Observer(db)
	if o == nil {
		return
	}
	for ; n > 0; n-- {
		o.Observe(observe.Event{Mechanism: observe.Holds, Kind: observe.HoldForceReleased, Name: name})
	}
}

// sweepExpired finds the resource's holds whose TTL has passed but that
// were never released, marks each as ended at its expiry
// (released_at = expires_at) and returns a HoldExpired event for each it
// marked. Only the statement that marked a hold reports it, so each is
// reported once, whichever process meets it first. It runs only when an
// Observer is set: without one, reads send nothing more than before, and
// an expired hold simply stops counting. Its statements run on r: inside
// Acquire's transaction (under the resource's lock), or on the pool for
// the reads.
func sweepExpired(ctx context.Context, r runner, c *call) ([]observe.Event, error) {
	var (
		ids    []int64
		lasted []time.Duration
		res    = c.res
	)
	err := r.rows(ctx, c.q.expiredUnmarked, []any{res.table, res.id}, func(rows *sql.Rows) error {
		for rows.Next() {
			var id, created, expires int64
			if err := rows.Scan(&id, &created, &expires); err != nil {
				return err
			}
			ids = append(ids, id)
			lasted = append(lasted, time.Duration(expires-created)*time.Millisecond)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	var evs []observe.Event
	for i, id := range ids {
		n, err := r.exec(ctx, c.q.markExpired, id)
		if err != nil {
			return nil, err
		}
		if n == 1 {
			evs = append(evs, observe.Event{Mechanism: observe.Holds, Kind: observe.HoldExpired, Name: res.table + "/" + res.id, Duration: lasted[i]})
		}
	}
	return evs, nil
}

// report hands events to db's Observer.
func report(db *gorm.DB, evs []observe.Event) {
	if len(evs) == 0 {
		return
	}
	if o := plugin.Observer(db); o != nil {
		for _, e := range evs {
			o.Observe(e)
		}
	}
}
