package version

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/internal/plugin"
	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
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
// slow every later statement. Where the database cannot release one
// (ReleaseSavepoint is "": SQL Server, Oracle), it ends with the transaction.
func endSavepoint(db *gorm.DB, name string, undo bool) error {
	if undo {
		if err := db.Session(&gorm.Session{NewDB: true}).RollbackTo(name).Error; err != nil {
			return err
		}
	}
	query := drivers.For(dialects.Of(db)).ReleaseSavepoint(name)
	if query == "" {
		return nil
	}
	// RELEASE is sent on the transaction itself, as GORM sends SAVEPOINT:
	// MySQL cannot prepare it.
	pool := db.Statement.ConnPool
	if p, ok := pool.(*gorm.PreparedStmtTX); ok {
		pool = p.Tx
	}
	begin := time.Now()
	_, err := pool.ExecContext(db.Statement.Context, query)
	db.Logger.Trace(db.Statement.Context, begin, func() (string, int64) { return query, 0 }, err)
	return err
}

// beginBatch makes a statement that guards several rows all or nothing on
// its own: behind a savepoint inside a transaction (GORM's default one or
// the caller's), in a transaction of its own otherwise
// (SkipDefaultTransaction). On a conflict the rows it did match are put
// back before they are read again to say which row was stale.
//
// Where the database has a BatchLock (PostgreSQL), inside a transaction it
// opens no savepoint: it locks the rows the statement guards first instead
// (see lockFirst, and the driver's BatchLock for why).
func beginBatch(db *gorm.DB, st *state) {
	if db.DryRun {
		return
	}
	if plugin.InTransaction(db.Statement.ConnPool) {
		if lock := drivers.For(dialects.Of(db)).Reread().BatchLock(); lock != "" {
			lockFirst(db, st, lock)
			return
		}
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

// lockFirst reads the rows a guarded multi-row statement will write with
// the statement's own conditions and lock (the database's BatchLock: FOR
// UPDATE). When all of them are
// there at their versions they stay so (locked) until the transaction
// ends, so the statement that follows matches every one of them and
// needs nothing to undo; when one is missing the statement is not sent
// and the conflict is reported, nothing written. Under READ COMMITTED a
// row locked after waiting for a concurrent writer is checked again at its
// newest version; under REPEATABLE READ that case is PostgreSQL's
// serialization failure, which RetryOnConflict retries.
func lockFirst(db *gorm.DB, st *state, lock string) {
	stmt := db.Statement
	q := db.Session(&gorm.Session{NewDB: true, DryRun: true, Logger: logger.Discard}).
		Model(reflect.New(stmt.Schema.ModelType).Interface())
	q.Statement.Table, q.Statement.TableExpr = stmt.Table, stmt.TableExpr
	if stmt.Unscoped {
		q = q.Unscoped()
	}
	if c, ok := stmt.Clauses["WHERE"]; ok {
		if w, ok := c.Expression.(clause.Where); ok {
			q.Statement.AddClause(clause.Where{Exprs: w.Exprs})
		}
	}
	var discard []map[string]interface{}
	built := q.Select(stmt.Schema.PrimaryFieldDBNames).Find(&discard)
	if built.Error != nil {
		db.AddError(built.Error)
		return
	}
	query, vars := built.Statement.SQL.String()+lock, built.Statement.Vars
	begin := time.Now()
	n := int64(0)
	rows, err := stmt.ConnPool.QueryContext(stmt.Context, query, vars...)
	if err == nil {
		for rows.Next() {
			n++
		}
		err = rows.Err()
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}
	db.Logger.Trace(stmt.Context, begin, func() (string, int64) { return db.Dialector.Explain(query, vars...), n }, err)
	if err != nil {
		db.AddError(err)
		return
	}
	if n < want(st) {
		// A stale row: gorm:update (or gorm:delete) sends nothing after an
		// error, and check finds the statement failed.
		db.AddError(conflict(db, st))
	}
}
