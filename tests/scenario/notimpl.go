package scenario

import "errors"

// errNotImplemented marks a scenario whose mechanism has not landed yet.
var errNotImplemented = errors.New("scenario: not implemented yet")
