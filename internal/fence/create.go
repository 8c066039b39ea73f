package fence

import (
	"fmt"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/stmtstate"
)

// guardCreate runs before gorm:create: a fenced INSERT writes the fence
// into every row. An upsert would overwrite an existing row unguarded, so
// where its update branch takes a condition (PostgreSQL and SQLite) its DO
// UPDATE gets "WHERE fence <= mine" and writes the fence, and elsewhere it
// is refused (the database's UpsertFenceRefusal says why). An INSERT whose modifier replaces rows (SQLite's INSERT
// OR REPLACE) deletes the row it meets unguarded: refused. Save's own
// insert of a row its UPDATE did not find goes as a plain INSERT: a row
// inserted meanwhile makes it fail on the key instead of being overwritten.
//
// An upsert's insert branch has nothing to compare: a row hard-deleted by
// a later holder is inserted again. Soft delete keeps the row, with its
// deleter's fence (softDeleteFence), and the upsert meets it.
func guardCreate(db *gorm.DB) {
	tok, f, ok := prepare(db, "create")
	if !ok {
		return
	}
	stmt := db.Statement
	if c, has := stmt.Clauses["INSERT"]; has {
		if ins, ok := c.Expression.(clause.Insert); ok && strings.Contains(strings.ToUpper(ins.Modifier), "REPLACE") {
			db.AddError(fmt.Errorf("%w: a fenced INSERT %s of %s deletes the row it meets without comparing fences; use Create, and Updates or Save for existing rows; nothing was sent",
				ErrUnguarded, ins.Modifier, stmt.Schema.Name))
			return
		}
	}
	if c, has := stmt.Clauses["ON CONFLICT"]; has {
		oc, _ := c.Expression.(clause.OnConflict)
		d := dialects.Of(db)
		refusal := drivers.For(d).Reread().UpsertFenceRefusal()
		switch {
		case oc.DoNothing:
		case oc.UpdateAll && stmt.SkipHooks && len(oc.DoUpdates) == 0 && len(oc.Columns) == 0:
			delete(stmt.Clauses, "ON CONFLICT") // Save's fallback
		case refusal == "":
			oc.Where.Exprs = append(oc.Where.Exprs, cond{col: f.DBName, fence: tok.fence})
			if !oc.UpdateAll {
				// DO UPDATE SET balance = ...: the row must take the
				// writer's fence too (UpdateAll sets every column, the
				// fence among them).
				oc.DoUpdates = upsertFence(oc.DoUpdates, f)
			}
			c.Expression = oc
			stmt.Clauses["ON CONFLICT"] = c
			stmtstate.Put(stmt, stateKey, &state{op: "upsert", tok: tok, field: f, keyed: keyedRows(stmt)})
		default:
			db.AddError(&dialects.UnsupportedError{Dialect: d.String(), Feature: "fenced upsert of " + stmt.Schema.Name,
				Reason: refusal + "; use Create for new rows and Updates or Save of one row for existing ones; nothing was sent"})
			return
		}
	}
	setValues(stmt, f, tok.fence)
}

// upsertFence returns an upsert's DO UPDATE assignments with the fence
// column set to the inserted row's (which is the writer's: setValues),
// in place of any assignment of it.
func upsertFence(set clause.Set, f *schema.Field) clause.Set {
	out := make(clause.Set, 0, len(set)+1)
	for _, a := range set {
		if a.Column.Name != f.DBName {
			out = append(out, a)
		}
	}
	return append(out, clause.AssignmentColumns([]string{f.DBName})...)
}

// setValues writes the fence into the values of an INSERT.
func setValues(stmt *gorm.Statement, f *schema.Field, fence int64) {
	switch dest := stmt.Dest.(type) {
	case map[string]interface{}:
		dest[f.DBName] = fence
		return
	case *map[string]interface{}:
		(*dest)[f.DBName] = fence
		return
	case []map[string]interface{}:
		for _, m := range dest {
			m[f.DBName] = fence
		}
		return
	case *[]map[string]interface{}:
		for _, m := range *dest {
			m[f.DBName] = fence
		}
		return
	}
	eachRow(stmt, func(rv reflect.Value) {
		if rv.CanAddr() {
			stmt.AddError(f.Set(stmt.Context, rv, Fence(fence)))
		}
	})
}

// checkCreate runs after gorm:create: an upsert that wrote fewer rows than
// it was given skipped a row under a greater fence.
func checkCreate(db *gorm.DB) {
	stmt := db.Statement
	st, _ := stmtstate.Take(stmt, stateKey).(*state)
	if st == nil || db.Error != nil || db.DryRun || st.keyed == 0 || db.RowsAffected >= int64(st.keyed) {
		return
	}
	_, values := schema.GetIdentityFieldValuesMap(stmt.Context, stmt.ReflectValue, stmt.Schema.PrimaryFields)
	col, vals := schema.ToQueryValues(stmt.Table, stmt.Schema.PrimaryFieldDBNames, values)
	n, cur, err := reread(db, st.field, []clause.Expression{clause.IN{Column: col, Values: vals}})
	_ = n
	if err != nil {
		db.AddError(fmt.Errorf("lockplugin: fenced upsert of %s wrote %d of %d rows, and reading them again failed: %w", stmt.Table, db.RowsAffected, st.keyed, err))
		return
	}
	if cur > st.tok.fence {
		db.AddError(&StaleFenceError{Op: st.op, Table: stmt.Table, Lease: st.tok.name(), Fence: st.tok.fence, Current: cur})
	}
}
