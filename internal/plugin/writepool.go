package plugin

import (
	"context"

	"gorm.io/gorm"
)

// dbresolverCallback is the name gorm.io/plugin/dbresolver registers its
// pool-switching callbacks under. Its Create callback always picks a source
// (write) pool, which is where a lock, a claim or a hold must live.
const dbresolverCallback = "gorm:db_resolver"

// WritePool returns the connection pool a write through db goes to: cp, or
// the source dbresolver would pick for a write. With table set, dbresolver
// chooses as for a write on that table, on a fresh statement; without, on
// a copy of db's statement, so that dbresolver.Use and per-table resolvers
// of the model count. It sends nothing.
func WritePool(ctx context.Context, db *gorm.DB, cp gorm.ConnPool, table string) gorm.ConnPool {
	resolve := db.Callback().Create().Get(dbresolverCallback)
	if resolve == nil {
		return cp
	}
	var tx *gorm.DB
	if table != "" {
		tx = db.Session(&gorm.Session{NewDB: true, Context: ctx})
		tx.Statement.Table = table
	} else {
		tx = db.Session(&gorm.Session{Context: ctx})
	}
	resolve(tx)
	if tx.Statement.ConnPool != nil {
		return tx.Statement.ConnPool
	}
	return cp
}
