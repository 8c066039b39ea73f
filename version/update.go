package version

import (
	"fmt"
	"reflect"

	"github.com/lockplugin/lockplugin/dialects"
	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// bump is "version = table.version + 1".
func bump(f *schema.Field) clause.Assignment {
	return clause.Assignment{
		Column: clause.Column{Name: f.DBName},
		Value: clause.Expr{SQL: "? + 1", Vars: []interface{}{
			clause.Column{Table: clause.CurrentTable, Name: f.DBName},
		}},
	}
}

// withBump returns set with its assignment to the version column replaced
// by the increment (appended when there was none): the version column is
// written by lockplugin only, even under SkipVersionCheck.
func withBump(set []clause.Assignment, f *schema.Field) []clause.Assignment {
	out := make([]clause.Assignment, 0, len(set)+1)
	at := -1
	for _, a := range set {
		if a.Column.Name == f.DBName && (a.Column.Table == "" || a.Column.Table == clause.CurrentTable || a.Column.Table == f.Schema.Table) {
			if at < 0 {
				at = len(out)
			}
			continue
		}
		out = append(out, a)
	}
	if at < 0 {
		return append(out, bump(f))
	}
	out = append(out, clause.Assignment{})
	copy(out[at+1:], out[at:])
	out[at] = bump(f)
	return out
}

// loadedDest returns the row of an update whose Model carries no version
// but whose values are a loaded struct of the same model, as in
// db.Model(&Book{ID: id}).Updates(&book): the version the values were read
// at guards the update instead of being dropped. The primary key is the
// Model's, or the values' when the Model has none.
func loadedDest(stmt *gorm.Statement, f *schema.Field, model row) (row, bool, bool) {
	if stmt.Dest == nil || stmt.Dest == stmt.Model || len(stmt.Schema.PrimaryFields) == 0 {
		return row{}, false, false
	}
	dv, ok := ofModelType(stmt, stmt.Dest)
	if !ok || dv.Kind() != reflect.Struct {
		return row{}, false, false
	}
	d, loaded, err := rowOf(stmt, f, reflect.ValueOf(stmt.Dest), dv)
	if err != nil || d.version == 0 {
		return row{}, false, false
	}
	r := row{value: model.value, entity: d.entity, version: d.version, pk: model.pk, also: dv}
	for _, pf := range stmt.Schema.PrimaryFields {
		if _, zero := pf.ValueOf(stmt.Context, model.value); zero {
			if !loaded {
				return row{}, false, false
			}
			r.pk = d.pk
			return r, true, true
		}
	}
	return r, false, true
}

// guardUpdate runs just before gorm:update. It builds the assignments GORM
// would send, replaces any assignment to the version column by the
// increment, and for a loaded model adds the version condition.
func guardUpdate(db *gorm.DB) {
	st := prepare(db, opUpdate)
	if st == nil {
		return
	}
	stmt, f := db.Statement, st.field
	if !st.loaded && len(st.rows) == 1 {
		if r, keyFromDest, ok := loadedDest(stmt, f, st.rows[0]); ok {
			st.rows, st.loaded, st.withKey = []row{r}, true, keyFromDest
		}
	}
	rows, loaded := st.rows, st.loaded
	var set clause.Set
	if c, ok := stmt.Clauses["SET"]; ok {
		s, ok := c.Expression.(clause.Set)
		if !ok {
			db.AddError(fmt.Errorf("lockplugin: cannot guard an UPDATE whose SET clause is a %T", c.Expression))
			return
		}
		set, st.userSet = s, &c
	} else {
		// SQL Server's dialector leaves an identity primary key out of the
		// SET inside its own gorm:update, which now finds the SET built:
		// leave it out here (SQL Server cannot update an identity column).
		if pf := stmt.Schema.PrioritizedPrimaryField; pf != nil && pf.AutoIncrement &&
			dialects.Of(db).Kind == dialects.SQLServer {
			stmt.Omits = append(stmt.Omits, pf.DBName)
		}
		// The same conversion gorm:update would make (it adds the primary
		// key condition too); gorm:update then uses this SET as it is.
		set = callbacks.ConvertToAssignments(stmt)
		if db.Error != nil || len(set) == 0 {
			return // GORM sends nothing for an empty SET; neither does the guard
		}
		// ConvertToAssignments copied the assigned values into the model,
		// the version included; the model keeps the version it was loaded
		// with until the write succeeds.
		setVersions(stmt, f, rows, 0)
	}
	stmt.AddClause(clause.Set(withBump(set, f)))
	if loaded && !skipped(stmt) {
		st.guarded = true
		// With a SET of the caller's own, GORM adds no primary key
		// condition: the guard brings it, so that it never updates every
		// row that happens to be at the same version.
		stmt.AddClause(clause.Where{Exprs: []clause.Expression{versionCond{field: f, rows: rows, withKey: st.userSet != nil || st.withKey}}})
		if len(rows) > 1 {
			beginBatch(db, st)
		}
	}
	stmt.Clauses[stateKey] = clause.Clause{Expression: st}
}
