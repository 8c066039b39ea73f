package holds

import "time"

// Holdable is implemented by a resource model: a GORM model with a
// single-column primary key whose holds are counted. HoldCapacity says how
// many active holds the resource admits; zero or less means it is full.
type Holdable interface {
	HoldCapacity() int
}

// Hold is one holder's claim on one slot of a resource.
type Hold struct {
	// ID identifies the hold in the holds table.
	ID int64
	// ResourceType is the resource's table name.
	ResourceType string
	// ResourceID is the resource's primary key, as a string.
	ResourceID string
	// Holder says who holds the slot, e.g. "user:42".
	Holder string
	// CreatedAt is when the hold was granted, by the database clock.
	CreatedAt time.Time
	// ExpiresAt is when the hold stops counting, by the database clock; nil
	// when it lasts until released.
	ExpiresAt *time.Time
	// ReleasedAt is when the hold was released; nil while it is not.
	ReleasedAt *time.Time

	// table is the holds table the hold lives in, as Acquire or ActiveFor
	// found it; "" for a Hold built by hand.
	table string
	// key is the resource's primary key column, which Extend locks the
	// resource row by; "" for a Hold built by hand.
	key string
}

// holdRow is the hold as stored. Times are epoch milliseconds of the
// database clock.
type holdRow struct {
	ID           int64  `gorm:"column:id;primaryKey;autoIncrement"`
	ResourceType string `gorm:"column:resource_type"`
	ResourceID   string `gorm:"column:resource_id"`
	Holder       string `gorm:"column:holder"`
	CreatedMs    int64  `gorm:"column:created_at"`
	ExpiresMs    *int64 `gorm:"column:expires_at"`
	ReleasedMs   *int64 `gorm:"column:released_at"`
}

func (r holdRow) hold(table, key string) *Hold {
	return &Hold{
		ID:           r.ID,
		ResourceType: r.ResourceType,
		ResourceID:   r.ResourceID,
		Holder:       r.Holder,
		CreatedAt:    time.UnixMilli(r.CreatedMs),
		ExpiresAt:    msTime(r.ExpiresMs),
		ReleasedAt:   msTime(r.ReleasedMs),
		table:        table,
		key:          key,
	}
}

func msTime(ms *int64) *time.Time {
	if ms == nil {
		return nil
	}
	t := time.UnixMilli(*ms)
	return &t
}
