package version

import (
	"fmt"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
	"gorm.io/gorm/utils"
)

// stateKey holds the guard's state in Statement.Clauses between the guard
// callback and the check callback; it is never built into SQL.
const stateKey = "lockplugin:version_state"

// row is one model a statement writes.
type row struct {
	value   reflect.Value // the struct
	entity  any           // what ConcurrencyError.Entity reports
	version Version       // the version it was loaded with
	pk      []any
	keyed   bool // every primary key field is non-zero
	// also is a second struct that carries the row's version, when the
	// version came from the values given to Updates rather than from the
	// model (see loadedDest); it gets the new version too.
	also reflect.Value
}

// state is what the guard callback leaves for the check callback.
type state struct {
	op      opKind
	field   *schema.Field
	rows    []row // the models written; all loaded when guarded
	loaded  bool  // every row has a primary key and a version
	guarded bool  // the statement carries the version condition
	bumped  bool  // a soft delete's UPDATE got the increment
	// withKey: the rows were found where GORM does not take its primary
	// key condition from, so the guard brings the key itself.
	withKey bool
	// byCond: the version came from the values of an update whose model
	// has no primary key; the caller's conditions pick the row.
	byCond bool
	// zero: Strict guards a keyed model without a version by version 0.
	zero    bool
	userSet *clause.Clause
	// assocs is the registration's memo of association Deletes, for the
	// error's hint.
	assocs *assocs
	// A statement guarding several rows runs behind a savepoint, or in a
	// transaction of its own whose pool is kept here.
	savepoint string
	pool      gorm.ConnPool
}

// Build renders nothing: state is kept in Statement.Clauses only so that it
// travels with the statement.
func (*state) Build(clause.Builder) {}

// versionCond is the WHERE condition of a guarded statement. It has a type
// of its own so that the check callback can take it out again.
type versionCond struct {
	field *schema.Field
	rows  []row
	// withKey adds the primary key to a single row's condition, for a
	// statement to which GORM adds none itself.
	withKey bool
}

// Build writes "table.version = ?" for one row, and for several (or with
// withKey) "((table.id = ? AND table.version = ?) OR ...)"; a row read at
// Null is guarded by "table.version IS NULL".
func (c versionCond) Build(b clause.Builder) {
	col := clause.Column{Table: clause.CurrentTable, Name: c.field.DBName}
	if len(c.rows) == 1 && (!c.withKey || c.rows[0].pk == nil) {
		clause.Eq{Column: col, Value: guardValue(c.rows[0].version)}.Build(b)
		return
	}
	pks := c.field.Schema.PrimaryFields
	many := len(c.rows) > 1
	if many {
		b.WriteByte('(')
	}
	for i, r := range c.rows {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('(')
		for j, pf := range pks {
			clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: pf.DBName}, Value: r.pk[j]}.Build(b)
			b.WriteString(" AND ")
		}
		clause.Eq{Column: col, Value: guardValue(r.version)}.Build(b)
		b.WriteByte(')')
	}
	if many {
		b.WriteByte(')')
	}
}

// guardValue is what the version column is compared with: nil (which
// clause.Eq renders as IS NULL) for Null.
func guardValue(v Version) any {
	if v == Null {
		return nil
	}
	return int64(v)
}

// collect returns the models the statement writes, and whether every one of
// them is loaded (non-zero primary key and version).
func collect(stmt *gorm.Statement, f *schema.Field) ([]row, bool, error) {
	return collectValue(stmt, f, stmt.ReflectValue)
}

// collectValue is collect for rv, a struct or a slice of the model.
func collectValue(stmt *gorm.Statement, f *schema.Field, rv reflect.Value) ([]row, bool, error) {
	switch rv.Kind() {
	case reflect.Struct:
		r, loaded, err := rowOf(stmt, f, rv, rv)
		if err != nil {
			return nil, false, err
		}
		return []row{r}, loaded, nil
	case reflect.Slice, reflect.Array:
		rows := make([]row, 0, rv.Len())
		all := rv.Len() > 0
		seen := make(map[string]bool, rv.Len())
		for i := 0; i < rv.Len(); i++ {
			e := rv.Index(i)
			s := reflect.Indirect(e)
			if s.Kind() != reflect.Struct {
				return nil, false, nil
			}
			r, loaded, err := rowOf(stmt, f, e, s)
			if err != nil {
				return nil, false, err
			}
			all = all && loaded
			if loaded {
				// The same row twice would be counted once by the
				// database; keep the first, as the statement's IN does.
				k := utils.ToStringKey(r.pk...)
				if seen[k] {
					continue
				}
				seen[k] = true
			}
			rows = append(rows, r)
		}
		return rows, all, nil
	}
	return nil, false, nil
}

func rowOf(stmt *gorm.Statement, f *schema.Field, e, s reflect.Value) (row, bool, error) {
	v, err := versionOf(stmt, f, s)
	if err != nil {
		return row{}, false, err
	}
	r := row{value: s, version: v}
	switch {
	case e.Kind() == reflect.Ptr:
		r.entity = e.Interface()
	case s.CanAddr():
		r.entity = s.Addr().Interface()
	default:
		r.entity = s.Interface()
	}
	r.keyed = len(stmt.Schema.PrimaryFields) > 0
	r.pk = make([]any, len(stmt.Schema.PrimaryFields))
	for i, pf := range stmt.Schema.PrimaryFields {
		pv, zero := pf.ValueOf(stmt.Context, s)
		r.pk[i] = pv
		r.keyed = r.keyed && !zero
	}
	return r, r.keyed && v != 0, nil
}

// setVersions writes each row's version after delta increments into the
// models that can be written (not the copies the generics API passes).
func setVersions(stmt *gorm.Statement, f *schema.Field, rows []row, delta Version) {
	for _, r := range rows {
		for _, v := range []reflect.Value{r.value, r.also} {
			if v.IsValid() && v.CanAddr() {
				stmt.AddError(f.Set(stmt.Context, v, after(r.version, delta)))
			}
		}
	}
}

// ofModelType returns v's struct or slice of structs, pointers followed,
// when its elements are of the statement's model type.
func ofModelType(stmt *gorm.Statement, v any) (reflect.Value, bool) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Ptr && !rv.IsNil() {
		rv = rv.Elem()
	}
	t := rv.Type()
	if k := rv.Kind(); k == reflect.Slice || k == reflect.Array {
		t = t.Elem()
		for t.Kind() == reflect.Ptr {
			t = t.Elem()
		}
	} else if k != reflect.Struct {
		return reflect.Value{}, false
	}
	return rv, t == stmt.Schema.ModelType
}

// prepare finds the version field of a statement and the rows it writes.
// It returns nil when there is nothing to guard: an earlier error (or one it
// added), raw SQL, or a model without a version.
func (g *guard) prepare(db *gorm.DB, op opKind) *state {
	stmt := db.Statement
	if db.Error != nil || stmt.Schema == nil || stmt.SQL.Len() > 0 {
		return nil
	}
	f, err := versionField(stmt.Schema, op)
	if err != nil {
		db.AddError(err)
		return nil
	}
	if f == nil {
		return nil
	}
	g.learn(db)
	rows, loaded, err := collect(stmt, f)
	if err != nil {
		db.AddError(err)
		return nil
	}
	return &state{op: op, field: f, rows: rows, loaded: loaded, assocs: &g.assocs}
}

// sameValue reports whether a and b, the Model and the Dest of a
// statement, are the same value, without comparing two structs with ==
// (which panics for a struct holding a slice or a map, as the generics
// API's Updates(ctx, T{...}) passes them). Pointers, maps and slices are
// the same when they point to the same data; two uncomparable values of
// one type are taken to be the same, because GORM sets a missing Model to
// the Dest.
func sameValue(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Type() != vb.Type() {
		return false
	}
	switch va.Kind() {
	case reflect.Ptr, reflect.Map, reflect.Slice:
		return va.Pointer() == vb.Pointer()
	}
	if va.Comparable() {
		return a == b
	}
	return true
}

// keyless fails a write of a versioned model without a primary key that
// names no row (no conditions), before any SQL, with an error that says
// why and what to do instead of GORM's bare ErrMissingWhereClause (which
// it wraps, so errors.Is still matches it).
func keyless(db *gorm.DB, op opKind) bool {
	stmt := db.Statement
	if len(stmt.Schema.PrimaryFields) > 0 || hasConditions(stmt) || db.AllowGlobalUpdate {
		return false
	}
	db.AddError(fmt.Errorf("%w: lockplugin: %s has a version column but no primary key, so the %s cannot name its row and the version cannot guard it; "+
		"give %s a primary key (an ID field or a `gorm:\"primaryKey\"` tag), or pick the row with Where(...)",
		gorm.ErrMissingWhereClause, stmt.Schema.Name, op, stmt.Schema.Name))
	return true
}
