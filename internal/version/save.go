package version

import (
	"fmt"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"reflect"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/internal/sqldriver"

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
func (g *guard) createWith(create func(*gorm.DB)) func(*gorm.DB) {
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
		g.learn(db)
		if c, ok := stmt.Clauses["ON CONFLICT"]; ok {
			if oc, ok := c.Expression.(clause.OnConflict); ok && !oc.DoNothing {
				if g.isGuardedSave(stmt, f, oc) {
					saveEach(db)
					return
				}
				setInitial(stmt, f)
				bumpOnConflict(db, f, oc)
				if db.Error != nil {
					return
				}
				create(db)
				// The upsert may have updated rows that existed: give the
				// models the version their rows now hold.
				if db.Error == nil && !db.DryRun {
					syncVersions(db, f)
				}
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
func (g *guard) isGuardedSave(stmt *gorm.Statement, f *schema.Field, oc clause.OnConflict) bool {
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
		// Under Strict, a keyed row without a version is saved by its own
		// Save too, which refuses it when its row exists.
		if r.version != 0 || (g.strict && r.keyed) {
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
	// GORM's own slice (and FullSaveAssociations) upsert writes the
	// update time of every element; the Saves below skip the hooks that
	// would, because the surrounding Create already ran them.
	if _, track := stmt.Settings.Load("gorm:update_track_time"); track {
		now := db.NowFunc()
		for _, el := range elems {
			for _, uf := range stmt.Schema.Fields {
				if uf.AutoUpdateTime > 0 {
					db.AddError(uf.Set(stmt.Context, el.value, now))
				}
			}
		}
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
	} else if plugin.InTransaction(stmt.ConnPool) {
		// Inside the caller's transaction: behind a savepoint of its own,
		// released afterwards (GORM's nested Transaction never releases
		// its savepoints).
		name := newSavepoint()
		if err = savepoint(db, name); err == nil {
			err = run(db)
			if serr := endSavepoint(db, name, err != nil); err == nil {
				err = serr
			}
		}
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
	oc.DoUpdates = upsertBump(drivers.For(dialects.Of(db)).Reread(), oc.DoUpdates, f)
	stmt.AddClause(oc)
}

// upsertBump returns an upsert's DO UPDATE assignments with the version's
// replaced by an increment. When every other assignment takes the inserted
// row's value (the AssignmentColumns of an UpdateAll, or GORM's save of a
// has-one or has-many association, which writes only the foreign key), the
// version is incremented only if one of those columns changes, so that a
// Save of a Post with its unchanged, preloaded Comments leaves the
// comments' versions alone. The increment comes first: MySQL evaluates
// ON DUPLICATE KEY UPDATE assignments left to right, on the new values.
func upsertBump(rr sqldriver.Reread, set clause.Set, f *schema.Field) clause.Set {
	op, ref := rr.UpsertUnchanged()
	var cols []string
	for _, a := range set {
		if a.Column.Name == f.DBName {
			continue
		}
		c, ok := a.Value.(clause.Column)
		if !ok || c.Table != "excluded" || c.Name != a.Column.Name || c.Raw {
			cols = nil
			break
		}
		cols = append(cols, c.Name)
	}
	if ref == sqldriver.NoInsertedRef {
		cols = nil // the update branch cannot tell an unchanged row
	}
	if len(cols) == 0 {
		return clause.Set(withBump(set, f))
	}
	rest := withBump(set, f)
	out := make(clause.Set, 0, len(rest))
	out = append(out, clause.Assignment{Column: clause.Column{Name: f.DBName}, Value: changedBump{op: op, ref: ref, version: f.DBName, cols: cols}})
	for _, a := range rest {
		if a.Column.Name != f.DBName {
			out = append(out, a)
		}
	}
	return out
}

// changedBump is "CASE WHEN every column is unchanged THEN version ELSE
// COALESCE(version, 0) + 1 END" in an upsert's DO UPDATE.
type changedBump struct {
	op      string                // the database's null-safe equality
	ref     sqldriver.InsertedRef // how it names the inserted row's value
	version string
	cols    []string
}

// Build writes the CASE with the database's null-safe equality and its
// name for the inserted row's value (its UpsertUnchanged).
func (c changedBump) Build(b clause.Builder) {
	b.WriteString("CASE WHEN ")
	for i, col := range c.cols {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteQuoted(clause.Column{Table: clause.CurrentTable, Name: col})
		b.WriteString(c.op)
		if c.ref == sqldriver.ValuesFunc {
			b.WriteString("VALUES(")
			b.WriteQuoted(clause.Column{Name: col})
			b.WriteString(")")
		} else {
			b.WriteQuoted(clause.Column{Table: "excluded", Name: col})
		}
	}
	b.WriteString(" THEN ")
	b.WriteQuoted(clause.Column{Table: clause.CurrentTable, Name: c.version})
	b.WriteString(" ELSE COALESCE(")
	b.WriteQuoted(clause.Column{Table: clause.CurrentTable, Name: c.version})
	b.WriteString(", 0) + 1 END")
}
