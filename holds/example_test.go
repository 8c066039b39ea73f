package holds_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/holds"
)

// Seat is a resource: one row per seat, and a capacity of one holder.
type Seat struct {
	ID    uint
	Label string
}

// HoldCapacity implements holds.Holdable.
func (Seat) HoldCapacity() int { return 1 }

// Room admits as many holders as its Beds column says.
type Room struct {
	ID   uint
	Beds int
}

// HoldCapacity implements holds.Holdable.
func (r Room) HoldCapacity() int { return r.Beds }

var (
	db  *gorm.DB // opened by the application, e.g. gorm.Open(postgres.Open(dsn))
	ctx = context.Background()
)

var errSoldOut = errors.New("sold out")

// Acquire and handle ErrFull: a full resource is an ordinary answer.
func Example() {
	if err := holds.Migrate(db); err != nil { // once, at start-up
		panic(err)
	}
	seat := Seat{ID: 12}
	h, err := holds.Acquire(ctx, db, &seat, "user:42", holds.TTL(15*time.Minute))
	switch {
	case errors.Is(err, holds.ErrFull): // also matches lockplugin.ErrBusy
		fmt.Println(errSoldOut)
		return
	case err != nil:
		panic(err)
	}
	defer h.Release(ctx)
	fmt.Println("seat 12 is held for user:42 until", h.ExpiresAt)
}

// Take a hold inside your own transaction: it commits or rolls back with
// your other writes.
func ExampleAcquire_transaction() {
	room := Room{ID: 3}
	err := db.Transaction(func(tx *gorm.DB) error {
		h, err := holds.Acquire(ctx, tx, &room, "booking:981")
		if errors.Is(err, holds.ErrFull) {
			return errSoldOut
		}
		if err != nil {
			return err
		}
		return tx.Exec("UPDATE bookings SET hold_id = ? WHERE id = ?", h.ID, 981).Error
	})
	fmt.Println(err)
}

// Keep a hold alive while the user is still checking out, and give it back
// at the end.
func ExampleHold_Extend() {
	h, err := holds.ActiveFor(ctx, db, &Seat{ID: 12}, "user:42")
	if err != nil || h == nil {
		return // expired, released, or never held: acquire again
	}
	if err := h.Extend(ctx, 15*time.Minute); errors.Is(err, holds.ErrLost) {
		return // expired or force-released in the meantime: the seat may be someone else's now
	}
	defer h.Release(ctx)
}

// A hold built by hand, from an ID kept in the user's session, has no
// *gorm.DB: give it to the package function.
func ExampleRelease() {
	h := &holds.Hold{ID: 981}
	err := holds.Release(ctx, db, h)
	if errors.Is(err, holds.ErrLost) {
		fmt.Println("the hold had expired or was ended by an operator")
	}
}

// An operator frees a stuck slot; its stale holder's next Release or
// Extend reports ErrLost.
func ExampleForceRelease() {
	n, err := holds.ForceRelease(ctx, db, "seats", "12", "user:42")
	fmt.Println(n, err)
}

// Available is for display only: by the time it is read, the slot may be
// gone. To take one, Acquire. The capacity is the row's (Beds as stored),
// not the value passed in.
func ExampleAvailable() {
	n, err := holds.Available(ctx, db, &Room{ID: 3})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d beds left\n", n)
}

// Several holds tables: give each call the same Table.
func ExampleTable() {
	tickets := holds.Table("ticket_holds")
	if err := holds.Migrate(db, tickets); err != nil {
		panic(err)
	}
	h, err := holds.Acquire(ctx, db, &Seat{ID: 12}, "user:42", tickets)
	if err == nil {
		defer h.Release(ctx) // the hold remembers its table
	}
}

// Bad input is refused before anything is sent to the database.
func ExampleTTL_negative() {
	_, err := holds.Acquire(ctx, nil, &Seat{ID: 1}, "user:1", holds.TTL(-time.Second))
	fmt.Println(errors.Is(err, holds.ErrInvalid))
	// Output: true
}
