package version

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/internal/stmtstate"
)

// check runs just after gorm:update and gorm:delete. A guarded statement
// that matched fewer rows than it guards fails with a *ConcurrencyError;
// that error also keeps Save from falling back to its upsert. On success
// the models in memory get the new version. Either way the statement is
// left as the guard found it, so that a reused statement starts clean.
func check(db *gorm.DB) {
	stmt := db.Statement
	st, _ := stmtstate.Take(stmt, stateKey).(*state)
	if st == nil {
		return
	}
	if st.op == opUpdate {
		if st.userSet != nil {
			stmt.Clauses["SET"] = *st.userSet
		} else {
			delete(stmt.Clauses, "SET")
		}
	}
	if st.guarded {
		removeCond(stmt)
	}

	written := true
	if db.Error == nil && !db.DryRun && st.guarded && db.RowsAffected < want(st) {
		endBatch(db, st, true)
		// The rows the statement did match were put back: a refused write
		// reports none written (SQLite and MySQL would report the matched
		// ones, PostgreSQL, which locks them first, none).
		db.RowsAffected = 0
		err := conflict(db, st)
		db.AddError(err)
		// Strict's zero-version guard that found no row is GORM's own
		// update of nothing: no error, and Save goes on to insert.
		written = false
	}
	endBatch(db, st, db.Error != nil)
	if written && db.Error == nil && !db.DryRun && st.loaded && (st.op == opUpdate || st.bumped) {
		setVersions(stmt, st.field, st.rows, 1)
	}
}

func removeCond(stmt *gorm.Statement) {
	stmtstate.DropWhere(stmt, func(e clause.Expression) bool { _, mine := e.(versionCond); return mine })
}

// want is how many rows a guarded statement must match: every row it
// guards by key, at least one when the caller's conditions pick them.
func want(st *state) int64 {
	if st.byCond {
		return 1
	}
	return int64(len(st.rows))
}
