package driverhook

import "database/sql/driver"

// wrappedTx runs OnCommit and OnRollback around a transaction.
type wrappedTx struct {
	driver.Tx
	h *Hooks
}

func (t *wrappedTx) Commit() error {
	if t.h.OnCommit != nil {
		t.h.OnCommit()
	}
	return t.Tx.Commit()
}

func (t *wrappedTx) Rollback() error {
	if t.h.OnRollback != nil {
		t.h.OnRollback()
	}
	return t.Tx.Rollback()
}
