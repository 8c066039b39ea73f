package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// CheckCall is the argument check of a Store call, for store authors: it
// returns an error for a nil ctx, an empty name, an empty owner or a
// negative ttl, checked in that order, and nil otherwise. Pass 0 as ttl for
// Release, or for a store that ignores TTLs.
//
// The error's text has no package prefix; a store wraps it with its own,
// so that its errors name it:
//
//	if err := lease.CheckCall(ctx, name, owner, ttl); err != nil {
//		return fmt.Errorf("mystore: %w", err) // "mystore: empty owner"
//	}
//	if err := ctx.Err(); err != nil {
//		return err
//	}
//
// CheckCall does not look at ctx.Err(), since a store may want to
// return the context's error as it is, nor at what a store refuses
// beyond these (an owner too long for its column, say): a store checks
// those itself.
func CheckCall(ctx context.Context, name, owner string, ttl time.Duration) error {
	switch {
	case ctx == nil:
		return errors.New("nil context")
	case name == "":
		return errors.New("empty lock name")
	case owner == "":
		return errors.New("empty owner")
	case ttl < 0:
		return fmt.Errorf("negative TTL %v", ttl)
	}
	return nil
}
