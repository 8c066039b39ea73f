package sqldriver

// Advisory phrases package advisory's named locks.
type Advisory interface{}
