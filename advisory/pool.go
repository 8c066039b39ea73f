package advisory

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lockplugin/lockplugin/internal/plugin"

	"gorm.io/gorm"
)

// writePool returns the *sql.DB that writes through db go to: db's own pool,
// or the source dbresolver would pick for a write. It sends nothing.
func writePool(ctx context.Context, db *gorm.DB, chains ...*held) (*sql.DB, error) {
	cp := db.ConnPool
	if db.Statement != nil && db.Statement.ConnPool != nil {
		cp = db.Statement.ConnPool
	}
	if plugin.InTransaction(cp) {
		return nil, errInTransaction
	}
	if c, ok := cp.(*sql.Conn); ok {
		// fn's own conn, passed on to a nested acquisition: the new lock
		// takes a connection of its own from the same pool.
		if p := poolOfConn(c, chains...); p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("advisory: db is pinned to a *sql.Conn that advisory did not open; pass the *gorm.DB it came from")
	}
	cp = plugin.WritePool(ctx, db, cp, "") // as dbresolver would for a write
	switch p := cp.(type) {
	case *sql.DB:
		return p, nil
	case gorm.GetDBConnector:
		return p.GetDBConn()
	}
	return nil, fmt.Errorf("advisory: cannot pin a connection from a %T connection pool; advisory needs a *sql.DB behind GORM", cp)
}

// pinnedSession returns a *gorm.DB whose every statement runs on conn and
// whose context is ctx. It is a NewDB session (each chain starts a fresh
// Statement from it, taking only its connection pool, context and
// SkipHooks, and Unscoped where PropagateUnscoped says so), so its own
// Statement is made here with just those, instead of cloning db's whole
// Statement (its clauses, settings and joins, all dropped by the next
// chain anyway).
func pinnedSession(db *gorm.DB, conn *sql.Conn, ctx context.Context) *gorm.DB {
	s := db.Session(&gorm.Session{NewDB: true})
	st := &gorm.Statement{DB: s, ConnPool: conn, Context: ctx}
	if db.Statement != nil {
		st.SkipHooks = db.Statement.SkipHooks
		st.Unscoped = db.Statement.Unscoped
	}
	s.Statement = st
	return s
}
