package version

import (
	"github.com/lockplugin/lockplugin/internal/plugin"
	"gorm.io/gorm"
)

// savepointName is the savepoint a statement that guards several rows
// runs behind inside a transaction.
const savepointName = "lockplugin_version"

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
		if err := db.Session(&gorm.Session{NewDB: true}).SavePoint(savepointName).Error; err != nil {
			db.AddError(err)
			return
		}
		st.savepoint = true
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

// endBatch undoes (undo) or keeps what the statement wrote.
func endBatch(db *gorm.DB, st *state, undo bool) {
	switch {
	case st.savepoint && undo:
		db.AddError(db.Session(&gorm.Session{NewDB: true}).RollbackTo(savepointName).Error)
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
	st.savepoint, st.pool = false, nil
}
