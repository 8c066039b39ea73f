// Package lockerr holds the one sentinel that every mechanism's "someone
// else has it" answer matches, so that the mechanisms, which cannot import
// the root package, can make their own sentinels match it. Applications
// use it as lockplugin.ErrBusy.
package lockerr

import "errors"

// ErrBusy is matched by errors.Is for every answer that means "someone else
// holds it": a row lock refused by NOWAIT or a lock wait that timed out, an
// advisory lock not acquired within its wait, a lease held by another
// owner, a capacity hold refused because the resource is full.
var ErrBusy = errors.New("lockplugin: held by someone else")

// Busy returns a sentinel with the given message that errors.Is also
// matches against ErrBusy. A mechanism declares its own busy sentinel with
// it (var ErrTimeout = lockerr.Busy("advisory: ...")), so that callers may
// branch on either the mechanism's name or the shared one.
func Busy(msg string) error { return &busy{msg: msg} }

type busy struct{ msg string }

func (e *busy) Error() string { return e.msg }

// Is makes errors.Is(err, ErrBusy) true.
func (e *busy) Is(target error) bool { return target == ErrBusy }
