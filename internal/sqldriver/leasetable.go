package sqldriver

// LeaseTable phrases lease/sqlstore's statements over the lease table.
type LeaseTable interface{}
