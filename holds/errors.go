package holds

import "errors"

// ErrInvalid is matched by errors.Is when an argument is unusable: a nil or
// keyless resource, a zero primary key, an empty holder, a negative TTL, a
// bad table name. Nothing was written.
var ErrInvalid = errors.New("holds: invalid argument")

// ErrNotFound is matched by errors.Is when the resource's row does not exist
// (there is nothing to lock, so no hold can be granted safely), or when a
// hold passed to Release or Extend is not in the holds table.
var ErrNotFound = errors.New("holds: not found")

// ErrNotActive is matched by errors.Is when Extend is asked to extend a hold
// that was released or has expired: its slot may already belong to someone
// else, so it cannot be revived.
var ErrNotActive = errors.New("holds: hold is not active")
