package version

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockplugin/lockplugin/internal/plugin"
	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
)

// newSavepoint names a savepoint: unique, because MySQL replaces an older
// savepoint of the same name, which would break a nested one (a guarded
// batch inside a FullSaveAssociations save inside a caller's savepoint).
func newSavepoint() string { return fmt.Sprintf("lockplugin_version_%x", rand.Uint64()) }

// savepoint opens a savepoint on db's transaction.
func savepoint(db *gorm.DB, name string) error {
	return db.Session(&gorm.Session{NewDB: true}).SavePoint(name).Error
}

// endSavepoint rolls back to the savepoint (undo) and releases it, so that
// a caller's long transaction does not pile up open savepoints: on
// PostgreSQL more than 64 of them overflow the subtransaction cache and
// slow every later statement. SQL Server has no RELEASE; its savepoints
// end with the transaction.
func endSavepoint(db *gorm.DB, name string, undo bool) error {
	if undo {
		if err := db.Session(&gorm.Session{NewDB: true}).RollbackTo(name).Error; err != nil {
			return err
		}
	}
	if dialects.Of(db).Kind == dialects.SQLServer {
		return nil
	}
	// RELEASE is sent on the transaction itself, as GORM sends SAVEPOINT:
	// MySQL cannot prepare it.
	pool := db.Statement.ConnPool
	if p, ok := pool.(*gorm.PreparedStmtTX); ok {
		pool = p.Tx
	}
	query, begin := "RELEASE SAVEPOINT "+name, time.Now()
	_, err := pool.ExecContext(db.Statement.Context, query)
	db.Logger.Trace(db.Statement.Context, begin, func() (string, int64) { return query, 0 }, err)
	return err
}

// beginBatch makes a statement that guards several rows all or nothing on
// its own: behind a savepoint inside a transaction (GORM's default one or
// the caller's), in a transaction of its own otherwise
// (SkipDefaultTransaction). On a conflict the rows it did match are put
// back before they are read again to say which row was stale.
func beginBatch(db *gorm.DB, st *state) {
	if db.DryRun {
		return
	}
	if plugin.InTransaction(db.Statement.ConnPool) {
		name := newSavepoint()
		if err := savepoint(db, name); err != nil {
			db.AddError(err)
			return
		}
		st.savepoint = name
		return
	}
	tx := db.Session(&gorm.Session{NewDB: true}).Begin()
	if tx.Error != nil {
		db.AddError(tx.Error)
		return
	}
	st.pool = db.Statement.ConnPool
	db.Statement.ConnPool = tx.Statement.ConnPool
}

// endBatch undoes (undo) or keeps what the statement wrote, and ends the
// savepoint or the transaction beginBatch opened.
func endBatch(db *gorm.DB, st *state, undo bool) {
	switch {
	case st.savepoint != "":
		db.AddError(endSavepoint(db, st.savepoint, undo))
	case st.pool != nil:
		if txc, ok := db.Statement.ConnPool.(gorm.TxCommitter); ok {
			if undo {
				_ = txc.Rollback()
			} else {
				db.AddError(txc.Commit())
			}
		}
		db.Statement.ConnPool = st.pool
	}
	st.savepoint, st.pool = "", nil
}
