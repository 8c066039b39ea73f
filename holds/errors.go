package holds

import (
	"errors"

	"github.com/lockplugin/lockplugin/internal/lockerr"
)

// ErrInvalid is matched by errors.Is when an argument is unusable: a nil or
// keyless resource, a zero primary key, an empty holder, a negative TTL, a
// bad table name, a zero Hold or a nil *Hold. Nothing was written.
var ErrInvalid = errors.New("holds: invalid argument")

// ErrNotFound is matched by errors.Is when the resource's row does not exist
// (there is nothing to lock, so no hold can be granted safely), or when a
// hold passed to Release or Extend is not in the holds table.
var ErrNotFound = errors.New("holds: not found")

// ErrFull is matched by errors.Is when Acquire found no free slot: the
// resource already has as many active holds as its row's capacity admits.
// It also matches lockplugin.ErrBusy, the answer every mechanism gives when
// someone else has what was asked for. Acquire returns it with a nil Hold.
var ErrFull = lockerr.Busy("holds: resource is full")

// ErrLost is matched by errors.Is when Release or Extend finds that the
// hold stopped being this handle's before the call: it expired (its TTL
// passed by the database clock), an operator ended it with ForceRelease,
// or another copy of the hold released it. Its slot may already be someone
// else's: whatever the holder did under it since must be treated as done
// without the hold.
var ErrLost = errors.New("holds: hold lost (expired, force-released or released elsewhere)")

// ErrNotActive is matched by errors.Is when Extend is asked to extend a hold
// that is not active: one this handle released, or (together with ErrLost)
// one that was lost. Its slot may already belong to someone else, so it
// cannot be revived.
var ErrNotActive = errors.New("holds: hold is not active")

// ErrNoCapacity is matched by errors.Is, together with ErrFull, when
// Acquire found the resource's row saying a capacity of zero or less: no
// hold can be granted however many are released. A closed resource says
// so on purpose; otherwise the capacity column is missing, unset (zero or
// NULL) on rows that predate it, or not the field HoldCapacity reads. It
// matches ErrFull too, since to a caller a closed resource is full.
var ErrNoCapacity = errors.New("holds: the resource's capacity is zero")
