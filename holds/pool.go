package holds

import (
	"context"
	"database/sql"
	"fmt"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/internal/plugin"
)

// callPool returns where a call's statements go, and whether that is the
// caller's transaction. Outside one it is the pool writes go to: db's own,
// or the source dbresolver picks for a write on the holds table. Every
// statement of this package goes there, reads included: they decide or
// report grants, and a replica that lags (or is empty) answers for a past
// that no longer holds. It sends nothing.
func callPool(ctx context.Context, db *gorm.DB, holdsTable string) (gorm.ConnPool, bool) {
	cp := db.Statement.ConnPool
	if cp == nil {
		cp = db.ConnPool
	}
	if plugin.InTransaction(cp) {
		return cp, true
	}
	return plugin.WritePool(ctx, db, cp, holdsTable), false
}

// beginTx begins a transaction on pool: a *sql.DB or *sql.Conn, or GORM's
// prepared-statement pool.
func beginTx(ctx context.Context, pool gorm.ConnPool, opts *sql.TxOptions) (gorm.ConnPool, gorm.TxCommitter, error) {
	switch b := pool.(type) {
	case gorm.TxBeginner:
		tx, err := b.BeginTx(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		return tx, tx, nil
	case gorm.ConnPoolBeginner:
		tx, err := b.BeginTx(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		if c, ok := tx.(gorm.TxCommitter); ok {
			return tx, c, nil
		}
		return nil, nil, fmt.Errorf("holds: a transaction of a %T cannot commit", pool)
	}
	return nil, nil, fmt.Errorf("holds: cannot begin a transaction on a %T connection pool", pool)
}

// direct returns the transaction under GORM's prepared-statement wrapper,
// for the savepoint statements MySQL does not allow in prepared mode.
func direct(q gorm.ConnPool) gorm.ConnPool {
	if p, ok := q.(*gorm.PreparedStmtTX); ok && p.Tx != nil {
		return p.Tx
	}
	return q
}
