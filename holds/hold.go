package holds

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Holdable is implemented by a resource model: a GORM model with a
// single-column primary key whose holds are counted. HoldCapacity says how
// many active holds the resource admits; zero or less means it is full.
type Holdable interface {
	HoldCapacity() int
}

// Hold is one holder's claim on one slot of a resource. A Hold returned by
// Acquire or ActiveFor is a handle: it remembers the *gorm.DB and the holds
// table it came from, so that its Release and Extend methods need neither.
// A Hold built by hand (say, from an ID kept in a session) has no *gorm.DB:
// give it to the package functions Release and Extend instead. The zero
// Hold and a nil *Hold are refused with ErrInvalid, never a panic.
//
// A Hold is not safe for concurrent use: its methods update its fields.
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
	// ReleasedAt is when the hold was released; nil while it is not (and
	// after a Release whose row a Purge of age ~0 deleted at once, before
	// the time could be read back).
	ReleasedAt *time.Time

	// table is the holds table the hold lives in, as Acquire or ActiveFor
	// found it; "" for a Hold built by hand.
	table string
	// key is the resource's primary key column, which Extend locks the
	// resource row by; "" for a Hold built by hand.
	key string
	// db is the session the hold was acquired or read with; nil for a Hold
	// built by hand.
	db *gorm.DB
	// released is set once this handle's Release succeeded: releasing it
	// again is a no-op.
	released bool
}

// errZeroHold is returned for a nil *Hold or a Hold without an ID.
func errZeroHold(call string) error {
	return fmt.Errorf("%w: %s of a nil or zero Hold: use the Hold that holds.Acquire or holds.ActiveFor returned, or build one with the ID of a hold in the table", ErrInvalid, call)
}

// Release gives the hold's slot back, on the *gorm.DB and holds table the
// hold came from, with ctx; see the package function Release for what it
// returns. Releasing a hold this handle has already released is a no-op
// returning nil; a hold that expired or was force-released before the call
// is reported with ErrLost.
func (h *Hold) Release(ctx context.Context) error {
	if h == nil || h.ID <= 0 {
		return errZeroHold("(*Hold).Release")
	}
	if h.db == nil {
		return fmt.Errorf("%w: (*Hold).Release of hold %d, which was built by hand and has no *gorm.DB: call holds.Release(ctx, db, h)", ErrInvalid, h.ID)
	}
	return Release(ctx, h.db, h)
}

// Extend moves the hold's expiry to ttl from now, on the *gorm.DB and holds
// table the hold came from; see the package function Extend. A hold that
// expired or was force-released is reported with ErrLost (and
// ErrNotActive).
func (h *Hold) Extend(ctx context.Context, ttl time.Duration) error {
	if h == nil || h.ID <= 0 {
		return errZeroHold("(*Hold).Extend")
	}
	if h.db == nil {
		return fmt.Errorf("%w: (*Hold).Extend of hold %d, which was built by hand and has no *gorm.DB: call holds.Extend(ctx, db, h, ttl)", ErrInvalid, h.ID)
	}
	return Extend(ctx, h.db, h, ttl)
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
