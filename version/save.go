package version

import (
	"fmt"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// createWith wraps the dialector's gorm:create. For a versioned model it
// sets the initial version, makes upserts increment the version instead of
// overwriting it, and turns Save of a slice (which GORM sends as one upsert
// that would overwrite newer rows) into one guarded statement per row, all
// or nothing.
func createWith(create func(*gorm.DB)) func(*gorm.DB) {
	return func(db *gorm.DB) {
		stmt := db.Statement
		if db.Error != nil || stmt.Schema == nil || stmt.SQL.Len() > 0 {
			create(db)
			return
		}
		f, err := versionField(stmt.Schema, opCreate)
		if err != nil {
			db.AddError(err)
			return
		}
		if f == nil {
			create(db)
			return
		}
		if c, ok := stmt.Clauses["ON CONFLICT"]; ok {
			if oc, ok := c.Expression.(clause.OnConflict); ok && !oc.DoNothing {
				if isGuardedSave(stmt, f, oc) {
					saveEach(db)
					return
				}
				setInitial(stmt, f)
				bumpOnConflict(db, f, oc)
				if db.Error != nil {
					return
				}
				create(db)
				return
			}
		}
		setInitial(stmt, f)
		if db.Error == nil {
			create(db)
		}
	}
}

// isGuardedSave reports whether the statement is an upsert that GORM makes
// out of a Save, holding at least one loaded model, which the guard must
// not let GORM upsert: Save of a slice (GORM marks it with
// gorm:update_track_time), and, with FullSaveAssociations, the save of a
// model's associations (an ON CONFLICT ... UpdateAll create of a struct or
// a slice). Under SkipVersionCheck it is left to GORM's upsert.
func isGuardedSave(stmt *gorm.Statement, f *schema.Field, oc clause.OnConflict) bool {
	if skipped(stmt) {
		return false
	}
	rv := stmt.ReflectValue
	switch k := rv.Kind(); {
	case stmt.DB.FullSaveAssociations && oc.UpdateAll && (k == reflect.Struct || k == reflect.Slice || k == reflect.Array):
	case k == reflect.Slice || k == reflect.Array:
		if _, ok := stmt.Settings.Load("gorm:update_track_time"); !ok {
			return false
		}
	default:
		return false
	}
	rows, _, err := collect(stmt, f)
	if err != nil {
		return true // saveEach reports it
	}
	for _, r := range rows {
		if r.version != 0 {
			return true
		}
	}
	return false
}

// saveEach saves every element of a slice (or the one struct) with its own
// Save: an INSERT for a new element, a guarded UPDATE for a loaded one. It runs them in the
// statement's transaction (GORM's default one), or else in a transaction of
// its own, or a savepoint inside the caller's transaction, so that one
// stale element leaves every row unchanged. Hooks were already run by the
// surrounding Create, as they are for GORM's own slice Save.
func saveEach(db *gorm.DB) {
	stmt := db.Statement
	rv := stmt.ReflectValue
	type elem struct {
		ptr     any
		value   reflect.Value
		version Version
		newRow  bool
	}
	at := rv.Index
	n := 0
	if rv.Kind() == reflect.Struct {
		at, n = func(int) reflect.Value { return rv }, 1
	} else {
		n = rv.Len()
	}
	elems := make([]elem, n)
	f, _ := versionField(stmt.Schema, opCreate)
	for i := range elems {
		e := at(i)
		var ptr any
		switch {
		case e.Kind() == reflect.Ptr && !e.IsNil():
			ptr, e = e.Interface(), e.Elem()
		case e.Kind() == reflect.Struct && e.CanAddr():
			ptr = e.Addr().Interface()
		default:
			db.AddError(fmt.Errorf("%w: lockplugin: Save of versioned %s needs a slice of structs or of non-nil pointers; element %d is not one",
				gorm.ErrInvalidData, stmt.Schema.Name, i))
			return
		}
		v, err := versionOf(stmt, f, e)
		if err != nil {
			db.AddError(err)
			return
		}
		newRow := false
		for _, pf := range stmt.Schema.PrimaryFields {
			if _, zero := pf.ValueOf(stmt.Context, e); zero {
				newRow = true
			}
		}
		elems[i] = elem{ptr: ptr, value: e, version: v, newRow: newRow}
	}

	var total int64
	run := func(tx *gorm.DB) error {
		base := tx.Session(&gorm.Session{NewDB: true, SkipHooks: true})
		for _, el := range elems {
			q := base
			if stmt.Table != stmt.Schema.Table || stmt.TableExpr != nil {
				q = q.Clauses()
				q.Statement.Table, q.Statement.TableExpr = stmt.Table, stmt.TableExpr
			}
			if stmt.Unscoped {
				q = q.Unscoped()
			}
			if len(stmt.Selects) > 0 {
				q = q.Select(stmt.Selects)
			}
			if len(stmt.Omits) > 0 {
				q = q.Omit(stmt.Omits...)
			}
			res := q.Save(el.ptr)
			if res.Error != nil {
				return res.Error
			}
			total += res.RowsAffected
		}
		return nil
	}

	var err error
	if _, ok := db.InstanceGet("gorm:started_transaction"); ok {
		err = run(db) // GORM rolls its transaction back on error
	} else {
		err = db.Session(&gorm.Session{NewDB: true}).Transaction(run)
	}
	if err != nil {
		// The rows are as they were; so are the models in memory.
		for _, el := range elems {
			db.AddError(f.Set(stmt.Context, el.value, el.version))
			if el.newRow {
				for _, pf := range stmt.Schema.PrimaryFields {
					db.AddError(pf.Set(stmt.Context, el.value, reflect.Zero(pf.FieldType).Interface()))
				}
			}
		}
		db.AddError(err)
		return
	}
	db.RowsAffected = total
}

// bumpOnConflict makes an upsert's DO UPDATE increment the version instead
// of writing the inserted row's version over it, so that an upsert never
// moves a row's version back. An upsert is not guarded.
func bumpOnConflict(db *gorm.DB, f *schema.Field, oc clause.OnConflict) {
	stmt := db.Statement
	if oc.UpdateAll {
		// Let GORM expand UpdateAll into the assignments it would send
		// (it honours Select, Omit and the update-time fields), then take
		// them over as explicit assignments.
		callbacks.ConvertToCreateValues(stmt)
		if db.Error != nil {
			return
		}
		expanded, ok := stmt.Clauses["ON CONFLICT"].Expression.(clause.OnConflict)
		if !ok {
			return
		}
		oc = expanded
		oc.UpdateAll = false
		if oc.DoNothing {
			stmt.AddClause(oc)
			return
		}
	}
	oc.DoUpdates = clause.Set(withBump(oc.DoUpdates, f))
	stmt.AddClause(oc)
}
