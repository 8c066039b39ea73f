package version

import (
	"encoding/json"
	"fmt"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/stmtstate"
)

// bump is "version = COALESCE(table.version, 0) + 1".
func bump(f *schema.Field) clause.Assignment { return bumpColumn(f.DBName) }

// bumpColumn increments col, and makes a NULL (a row that predates the
// column) 1, so that after any write the row holds a real version: a NULL
// plus one stays NULL in SQL, and such a row would never be guarded.
// COALESCE is standard SQL on every database lockplugin supports.
func bumpColumn(col string) clause.Assignment {
	return clause.Assignment{
		Column: clause.Column{Name: col},
		Value: clause.Expr{SQL: "COALESCE(?, 0) + 1", Vars: []interface{}{
			clause.Column{Table: clause.CurrentTable, Name: col},
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
	if stmt.Dest == nil || sameValue(stmt.Dest, stmt.Model) || len(stmt.Schema.PrimaryFields) == 0 {
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
// would send, takes the version the caller supplied (the Model's, or the
// one in the values given to Updates: a struct field, or a map key under
// the column or the field name), replaces any assignment to the version
// column by the increment, and adds the version condition.
func (g *guard) guardUpdate(db *gorm.DB) {
	stmt := db.Statement
	if db.Error != nil || stmt.SQL.Len() > 0 {
		return
	}
	if stmt.Schema == nil {
		g.guardTable(db)
		return
	}
	st := g.prepare(db, opUpdate)
	if st == nil {
		return
	}
	f := st.field
	if !st.loaded && len(st.rows) == 1 {
		if r, keyFromDest, ok := loadedDest(stmt, f, st.rows[0]); ok {
			st.rows, st.loaded, st.withKey = []row{r}, true, keyFromDest
		}
	}
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
		// leave it out here where the database cannot update an identity
		// column (UpdatesIdentity false: SQL Server).
		if pf := stmt.Schema.PrioritizedPrimaryField; pf != nil && pf.AutoIncrement &&
			!drivers.For(dialects.Of(db)).Reread().UpdatesIdentity() {
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
		setVersions(stmt, f, st.rows, 0)
	}
	if keyless(db, opUpdate) {
		return
	}
	if !g.supplied(db, st, set) {
		return
	}
	if !st.loaded {
		g.noteAssocDelete(stmt)
	}
	stmt.AddClause(clause.Set(withBump(set, f)))
	if st.loaded && !skipped(stmt) {
		st.guarded = true
		// With a SET of the caller's own, GORM adds no primary key
		// condition: the guard brings it, so that it never updates every
		// row that happens to be at the same version.
		stmt.AddClause(clause.Where{Exprs: []clause.Expression{versionCond{field: f, rows: st.rows, withKey: st.userSet != nil || st.withKey}}})
		if len(st.rows) > 1 {
			beginBatch(db, st)
		}
	}
	stmtstate.Put(stmt, stateKey, st)
}

// supplied makes a version the caller put in the values of the update a
// guard: db.Model(&Book{}).Where("id = ?", id).Updates(Book{Version: 1}),
// db.Model(&Book{ID: id}).Updates(map[string]any{"version": 1}) and the
// generics API's Updates(ctx, Book{Version: 1}) write only a row still at
// version 1. Rows with a primary key are guarded by key and version; a
// model without one by the caller's conditions and the version (a write
// that then matches no row is a conflict). Under Strict, a model with a
// primary key and no version is guarded by version zero. It returns false
// when it added an error.
func (g *guard) supplied(db *gorm.DB, st *state, set clause.Set) bool {
	stmt, f := db.Statement, st.field
	v, err := versionInSet(set, f)
	if err != nil {
		db.AddError(err)
		return false
	}
	if v != 0 {
		for _, r := range st.rows {
			if r.version != 0 && r.version != v {
				db.AddError(fmt.Errorf("%w: lockplugin: the update of %s carries two versions, %d (the model) and %d (the values); send the one the row was read at",
					gorm.ErrInvalidData, stmt.Schema.Name, r.version, v))
				return false
			}
		}
	}
	if st.loaded || skipped(stmt) || len(st.rows) == 0 {
		return true
	}
	keyed := len(stmt.Schema.PrimaryFields) > 0
	for _, r := range st.rows {
		keyed = keyed && r.keyed
	}
	switch {
	case v != 0 && keyed:
		for i := range st.rows {
			st.rows[i].version = v
		}
		st.loaded = true
	case v != 0 && len(st.rows) == 1:
		if !hasConditions(stmt) && !db.AllowGlobalUpdate {
			db.AddError(gorm.ErrMissingWhereClause)
			return false
		}
		r := &st.rows[0]
		r.version, r.pk, st.byCond, st.loaded = v, nil, true, true
		if dv, ok := ofModelType(stmt, stmt.Dest); ok && dv.Kind() == reflect.Struct && !sameValue(stmt.Dest, stmt.Model) {
			r.entity, r.also = stmt.Dest, dv
		}
	case v == 0 && keyed && g.strict:
		st.zero, st.loaded = true, true
	}
	return true
}

// versionInSet returns the version an assignment of the SET gives the
// version column, 0 when none does (or it assigns an expression, which the
// increment replaces).
func versionInSet(set clause.Set, f *schema.Field) (Version, error) {
	for _, a := range set {
		if a.Column.Name != f.DBName || (a.Column.Table != "" && a.Column.Table != clause.CurrentTable && a.Column.Table != f.Schema.Table) {
			continue
		}
		switch x := a.Value.(type) {
		case nil, clause.Expression, clause.Expr:
			return 0, nil
		case float64:
			if x != float64(int64(x)) {
				return 0, fmt.Errorf("%w: lockplugin: %s.%s must be an integer, got %v", gorm.ErrInvalidData, f.Schema.Name, f.Name, x)
			}
			return Version(x), nil
		case json.Number:
			n, err := x.Int64()
			if err != nil {
				return 0, fmt.Errorf("%w: lockplugin: %s.%s must be an integer, got %q", gorm.ErrInvalidData, f.Schema.Name, f.Name, x)
			}
			return Version(n), nil
		}
		if n, ok := asInt64(a.Value); ok {
			return Version(n), nil
		}
		return 0, fmt.Errorf("%w: lockplugin: %s.%s must be an integer, got a %T", gorm.ErrInvalidData, f.Schema.Name, f.Name, a.Value)
	}
	return 0, nil
}

// hasConditions is GORM's own test for an UPDATE without conditions, made
// before the guard adds one of its own.
func hasConditions(stmt *gorm.Statement) bool {
	c, ok := stmt.Clauses["WHERE"]
	if !ok {
		return false
	}
	w, ok := c.Expression.(clause.Where)
	return ok && len(w.Exprs) > 0
}
