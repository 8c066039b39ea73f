package version

import (
	"fmt"
	"reflect"

	"github.com/lockplugin/lockplugin/internal/plugin"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
	"gorm.io/gorm/utils"

	"github.com/lockplugin/lockplugin/dialects"
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
	userSet *clause.Clause
	// A statement guarding several rows runs behind a savepoint, or in a
	// transaction of its own whose pool is kept here.
	savepoint bool
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
// withKey) "((table.id = ? AND table.version = ?) OR ...)".
func (c versionCond) Build(b clause.Builder) {
	col := clause.Column{Table: clause.CurrentTable, Name: c.field.DBName}
	if len(c.rows) == 1 && !c.withKey {
		clause.Eq{Column: col, Value: int64(c.rows[0].version)}.Build(b)
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
		clause.Eq{Column: col, Value: int64(r.version)}.Build(b)
		b.WriteByte(')')
	}
	if many {
		b.WriteByte(')')
	}
}

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
	loaded := v != 0 && len(stmt.Schema.PrimaryFields) > 0
	r.pk = make([]any, len(stmt.Schema.PrimaryFields))
	for i, pf := range stmt.Schema.PrimaryFields {
		pv, zero := pf.ValueOf(stmt.Context, s)
		r.pk[i] = pv
		loaded = loaded && !zero
	}
	return r, loaded, nil
}

// setVersions writes each row's version plus delta into the models that
// can be written (not the copies the generics API passes).
func setVersions(stmt *gorm.Statement, f *schema.Field, rows []row, delta Version) {
	for _, r := range rows {
		for _, v := range []reflect.Value{r.value, r.also} {
			if v.IsValid() && v.CanAddr() {
				stmt.AddError(f.Set(stmt.Context, v, r.version+delta))
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

// loadedModel returns the rows of the statement's Model when the value
// given to Delete is another, addressable one (Delete(&T{}) on
// Model(&loaded)) and the Model is loaded: GORM then deletes the Model's
// row, by its key, so the Model's version guards the delete.
func loadedModel(stmt *gorm.Statement, f *schema.Field) ([]row, bool) {
	if stmt.Model == nil || stmt.Model == stmt.Dest || !stmt.ReflectValue.CanAddr() {
		return nil, false
	}
	rv, ok := ofModelType(stmt, stmt.Model)
	if !ok {
		return nil, false
	}
	rows, loaded, err := collectValue(stmt, f, rv)
	return rows, err == nil && loaded
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

// prepare finds the version field of a statement and the rows it writes.
// It returns nil when there is nothing to guard: an earlier error (or one it
// added), raw SQL, or a model without a version.
func prepare(db *gorm.DB, op opKind) *state {
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
	rows, loaded, err := collect(stmt, f)
	if err != nil {
		db.AddError(err)
		return nil
	}
	return &state{op: op, field: f, rows: rows, loaded: loaded}
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

// guardDelete runs just before gorm:delete and adds the version condition
// to the DELETE (or to the soft delete's UPDATE) of a loaded model. A soft
// delete also increments the version (see softDeleteBump).
func guardDelete(db *gorm.DB) {
	st := prepare(db, opDelete)
	if st == nil {
		return
	}
	stmt, f := db.Statement, st.field
	if !st.loaded {
		if rows, ok := loadedModel(stmt, f); ok {
			st.rows, st.loaded = rows, true
		}
	}
	rows, loaded := st.rows, st.loaded
	if loaded && !skipped(stmt) {
		st.guarded = true
		stmt.AddClause(clause.Where{Exprs: []clause.Expression{versionCond{field: f, rows: rows}}})
		if len(rows) > 1 {
			beginBatch(db, st)
		}
	}
	stmt.Clauses[stateKey] = clause.Clause{Expression: st}
}

// softDeleteBump wraps the SET clause builder. A soft delete builds its
// UPDATE inside gorm:delete, after the guard, from a SET clause of its own;
// the builder adds the version increment to it there, so that a stale
// holder of the row cannot write it back even through Unscoped.
func softDeleteBump(prev clause.ClauseBuilder) clause.ClauseBuilder {
	return func(c clause.Clause, b clause.Builder) {
		if stmt, ok := b.(*gorm.Statement); ok {
			if sc, ok := stmt.Clauses[stateKey]; ok {
				if st, ok := sc.Expression.(*state); ok && st.op == opDelete {
					if set, ok := c.Expression.(clause.Set); ok {
						c.Expression = clause.Set(withBump(set, st.field))
						st.bumped = true
					}
				}
			}
		}
		if prev != nil {
			prev(c, b)
			return
		}
		c.Build(b)
	}
}

// check runs just after gorm:update and gorm:delete. A guarded statement
// that matched fewer rows than it guards fails with a *ConcurrencyError;
// that error also keeps Save from falling back to its upsert. On success
// the models in memory get the new version. Either way the statement is
// left as the guard found it, so that a reused statement starts clean.
func check(db *gorm.DB) {
	stmt := db.Statement
	c, ok := stmt.Clauses[stateKey]
	if !ok {
		return
	}
	delete(stmt.Clauses, stateKey)
	st, _ := c.Expression.(*state)
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

	if db.Error == nil && !db.DryRun && st.guarded && db.RowsAffected < int64(len(st.rows)) {
		endBatch(db, st, true)
		db.AddError(conflict(db, st))
	}
	endBatch(db, st, db.Error != nil)
	if db.Error == nil && !db.DryRun && st.loaded && (st.op == opUpdate || st.bumped) {
		setVersions(stmt, st.field, st.rows, 1)
	}
}

func removeCond(stmt *gorm.Statement) {
	c, ok := stmt.Clauses["WHERE"]
	if !ok {
		return
	}
	w, ok := c.Expression.(clause.Where)
	if !ok {
		return
	}
	exprs := make([]clause.Expression, 0, len(w.Exprs))
	for _, e := range w.Exprs {
		if _, mine := e.(versionCond); !mine {
			exprs = append(exprs, e)
		}
	}
	if len(exprs) == 0 {
		delete(stmt.Clauses, "WHERE")
		return
	}
	c.Expression = clause.Where{Exprs: exprs}
	stmt.Clauses["WHERE"] = c
}

// savepointName is the savepoint a statement that guards several rows
// runs behind inside a transaction.
const savepointName = "lockplugin_version"

// beginBatch makes a statement that guards several rows all or nothing on
// its own: behind a savepoint inside a transaction (GORM's default one or
// the caller's), in a transaction of its own otherwise
// (SkipDefaultTransaction). On a conflict the rows it did match are put
// back before they are read again to say which row was stale.
func beginBatch(db *gorm.DB, st *state) {
	if db.DryRun {
		return
	}
	if plugin.InTransaction(db.Statement.ConnPool) {
		if err := db.Session(&gorm.Session{NewDB: true}).SavePoint(savepointName).Error; err != nil {
			db.AddError(err)
			return
		}
		st.savepoint = true
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

// endBatch undoes (undo) or keeps what the statement wrote.
func endBatch(db *gorm.DB, st *state, undo bool) {
	switch {
	case st.savepoint && undo:
		db.AddError(db.Session(&gorm.Session{NewDB: true}).RollbackTo(savepointName).Error)
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
	st.savepoint, st.pool = false, nil
}

// conflict builds the error for a guarded statement that matched too few
// rows, reading the rows again (this costs a query only on failure) to say
// whether each was changed or deleted.
func conflict(db *gorm.DB, st *state) error {
	var first *ConcurrencyError
	for i, r := range st.rows {
		cur, found, err := reread(db, st.field, r)
		e := &ConcurrencyError{
			Entity:     r.entity,
			Op:         st.op.String(),
			Table:      db.Statement.Table,
			PrimaryKey: r.pk,
			Version:    r.version,
			Current:    cur,
			Deleted:    err == nil && !found,
			reread:     err,
		}
		if err != nil || !found || cur != r.version {
			return e
		}
		if i == 0 {
			first = e
		}
	}
	return first
}
