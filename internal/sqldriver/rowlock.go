package sqldriver

// RowLock phrases the row-lock clauses and bounded waits of locking reads.
type RowLock interface{}
