package fence

import (
	"fmt"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/internal/stmtstate"
	"github.com/lockplugin/lockplugin/internal/version"
)

// checkWrite runs just after gorm:update and gorm:delete, before the
// version check. A fenced write that matched fewer rows than it picked by
// primary key, or one that picked its rows by conditions, reads them again
// (only then does it cost a query): a row matching the write's conditions
// with a greater fence makes it a *StaleFenceError. Either way the
// statement is left as the guard found it.
func checkWrite(db *gorm.DB) {
	stmt := db.Statement
	st, _ := stmtstate.Take(stmt, stateKey).(*state)
	if st == nil {
		return
	}
	if st.op == "update" {
		if st.hadSet {
			stmt.Clauses["SET"] = st.set
		} else {
			delete(stmt.Clauses, "SET")
		}
	}
	exprs := removeCond(stmt)
	if db.Error != nil || db.DryRun {
		return
	}
	if st.keyed > 0 && db.RowsAffected >= int64(st.keyed) {
		setModels(stmt, st)
		return
	}
	n, cur, err := reread(db, st.field, exprs)
	if err != nil {
		db.AddError(fmt.Errorf("lockplugin: fenced %s of %s matched %d rows, and reading them again to tell a stale fence failed: %w", st.op, stmt.Table, db.RowsAffected, err))
		return
	}
	if cur > st.tok.fence {
		db.AddError(&StaleFenceError{Op: st.op, Table: stmt.Table, Lease: st.tok.name(), Fence: st.tok.fence, Current: cur})
		return
	}
	if st.op == "update" && st.keyed > 0 && db.RowsAffected < n && !version.Guarded(stmt) {
		// MySQL and MariaDB count the rows an UPDATE changed, not those it
		// matched: a write of the values a row already has (the same
		// holder saving twice) matched it under its fence all the same.
		// Without this, Save would take the 0 for "no such row" and insert.
		db.RowsAffected = n
	}
	if db.RowsAffected > 0 {
		setModels(stmt, st)
	}
}

// removeCond takes the guard's condition out of the statement's WHERE and
// returns the remaining conditions, without the version guard's.
func removeCond(stmt *gorm.Statement) []clause.Expression {
	kept := stmtstate.DropWhere(stmt, func(e clause.Expression) bool { _, is := e.(cond); return is })
	var mine []clause.Expression
	for _, e := range kept {
		if !version.IsCondition(e) {
			mine = append(mine, e)
		}
	}
	return mine
}

// reread counts the rows the write's conditions match and reads their
// greatest fence, on the statement's connection (inside its transaction,
// if any). Inside a transaction it is the database's FenceRead (a locking
// read on MySQL and MariaDB): a plain one would read the transaction's
// snapshot, older than the row the UPDATE met.
func reread(db *gorm.DB, f *schema.Field, exprs []clause.Expression) (n, cur int64, err error) {
	stmt := db.Statement
	// Built in dry-run mode (not logged: it is not sent as built), sent below.
	q := db.Session(&gorm.Session{NewDB: true, DryRun: true, SkipHooks: true, Logger: logger.Discard}).Table(stmt.Table).Unscoped()
	if len(exprs) > 0 {
		q = q.Clauses(clause.Where{Exprs: exprs})
	}
	var dummy []map[string]any
	q = q.Select("COUNT(*), COALESCE(MAX(?), 0)", clause.Column{Name: f.DBName}).Find(&dummy)
	if q.Error != nil {
		return 0, 0, q.Error
	}
	sql := q.Statement.SQL.String()
	if plugin.InTransaction(stmt.ConnPool) {
		sql = drivers.For(dialects.Of(db)).Reread().FenceRead(sql)
	}
	err = stmt.ConnPool.QueryRowContext(stmt.Context, sql, q.Statement.Vars...).Scan(&n, &cur)
	return n, cur, err
}

// setModels writes the fence into the models the statement wrote.
func setModels(stmt *gorm.Statement, st *state) {
	if st.op == "delete" && !st.soft {
		return
	}
	eachRow(stmt, func(rv reflect.Value) {
		if rv.CanAddr() {
			_ = st.field.Set(stmt.Context, rv, Fence(st.tok.fence))
		}
	})
}

// eachRow calls fn with each struct of the statement's model value.
func eachRow(stmt *gorm.Statement, fn func(reflect.Value)) {
	rv := reflect.Indirect(stmt.ReflectValue)
	if stmt.Schema == nil || !rv.IsValid() {
		return
	}
	switch rv.Kind() {
	case reflect.Struct:
		if rv.Type() == stmt.Schema.ModelType {
			fn(rv)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < rv.Len(); i++ {
			e := reflect.Indirect(rv.Index(i))
			if e.Kind() == reflect.Struct && e.Type() == stmt.Schema.ModelType {
				fn(e)
			}
		}
	}
}

// keyedRows is how many rows the statement's model value picks by primary
// key: every struct with a non-zero key; 0 when any has none (its
// conditions pick the rows then) or the model has no key.
func keyedRows(stmt *gorm.Statement) int {
	if stmt.Schema == nil || len(stmt.Schema.PrimaryFields) == 0 {
		return 0
	}
	n, zero := 0, false
	eachRow(stmt, func(rv reflect.Value) {
		for _, pf := range stmt.Schema.PrimaryFields {
			if _, z := pf.ValueOf(stmt.Context, rv); z {
				zero = true
			}
		}
		n++
	})
	if zero {
		return 0
	}
	return n
}
