package fence

import (
	"fmt"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/stmtstate"
)

// guardCreate runs before gorm:create: a fenced INSERT writes the fence
// into every row. An upsert would overwrite an existing row unguarded, so
// on PostgreSQL and SQLite its DO UPDATE gets "WHERE fence <= mine", and
// elsewhere (MySQL's ON DUPLICATE KEY UPDATE has no WHERE) it is refused.
// Save's own insert of a row its UPDATE did not find goes as a plain
// INSERT: a row inserted meanwhile makes it fail on the key instead of
// being overwritten.
func guardCreate(db *gorm.DB) {
	tok, f, ok := prepare(db, "create")
	if !ok {
		return
	}
	stmt := db.Statement
	if c, has := stmt.Clauses["ON CONFLICT"]; has {
		oc, _ := c.Expression.(clause.OnConflict)
		switch {
		case oc.DoNothing:
		case oc.UpdateAll && stmt.SkipHooks && len(oc.DoUpdates) == 0 && len(oc.Columns) == 0:
			delete(stmt.Clauses, "ON CONFLICT") // Save's fallback
		case dialects.Of(db).Kind == dialects.Postgres || dialects.Of(db).Kind == dialects.SQLite:
			oc.Where.Exprs = append(oc.Where.Exprs, cond{col: f.DBName, fence: tok.fence})
			c.Expression = oc
			stmt.Clauses["ON CONFLICT"] = c
			stmtstate.Put(stmt, stateKey, &state{op: "upsert", tok: tok, field: f, keyed: keyedRows(stmt)})
		default:
			db.AddError(fmt.Errorf("%w: lockplugin: a fenced upsert of %s on %s cannot be guarded (ON DUPLICATE KEY UPDATE has no WHERE); use Create, and Updates for existing rows; nothing was sent",
				dialects.ErrUnsupported, stmt.Schema.Name, dialects.Of(db)))
			return
		}
	}
	setValues(stmt, f, tok.fence)
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
