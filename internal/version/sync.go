package version

import (
	"database/sql"
	"reflect"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"
	"gorm.io/gorm/utils"
)

// syncVersions reads back, after an upsert, the version of every row the
// statement wrote whose primary key is known, and writes it into the
// models: an upsert that updated an existing row incremented its version
// (or left it alone when nothing changed), which the models cannot know.
// It reads on the upsert's own connection, inside its transaction, so it
// sees its own write. One query per upsert.
func syncVersions(db *gorm.DB, f *schema.Field) {
	stmt := db.Statement
	rv := stmt.ReflectValue
	var elems []reflect.Value
	switch rv.Kind() {
	case reflect.Struct:
		elems = []reflect.Value{rv}
	case reflect.Slice, reflect.Array:
		for i := 0; i < rv.Len(); i++ {
			if e := reflect.Indirect(rv.Index(i)); e.Kind() == reflect.Struct {
				elems = append(elems, e)
			}
		}
	}
	pks := stmt.Schema.PrimaryFields
	if len(pks) == 0 {
		return
	}
	byKey := make(map[string][]reflect.Value, len(elems))
	var conds []clause.Expression
	for _, e := range elems {
		if !e.CanAddr() {
			continue
		}
		key := make([]any, len(pks))
		eq := make([]clause.Expression, len(pks))
		zero := false
		for i, pf := range pks {
			v, z := pf.ValueOf(stmt.Context, e)
			zero = zero || z
			key[i] = v
			eq[i] = clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: pf.DBName}, Value: v}
		}
		if zero {
			continue
		}
		k := utils.ToStringKey(key...)
		if _, seen := byKey[k]; !seen {
			conds = append(conds, clause.And(eq...))
		}
		byKey[k] = append(byKey[k], e)
	}
	if len(conds) == 0 {
		return
	}
	q := db.Session(&gorm.Session{NewDB: true, DryRun: true, Logger: logger.Discard}).
		Model(reflect.New(stmt.Schema.ModelType).Interface()).Unscoped()
	q.Statement.Table, q.Statement.TableExpr = stmt.Table, stmt.TableExpr
	cols := append([]string{f.DBName}, stmt.Schema.PrimaryFieldDBNames...)
	var discard []map[string]interface{}
	built := q.Select(cols).Where(clause.Or(conds...)).Find(&discard)
	if built.Error != nil {
		db.AddError(built.Error)
		return
	}
	query, vars := built.Statement.SQL.String(), built.Statement.Vars
	begin := time.Now()
	n := int64(0)
	var err error
	defer func() {
		db.Logger.Trace(stmt.Context, begin, func() (string, int64) { return db.Dialector.Explain(query, vars...), n }, err)
	}()
	rows, err := stmt.ConnPool.QueryContext(stmt.Context, query, vars...)
	if err != nil {
		db.AddError(err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var v sql.NullInt64
		dest := []any{&v}
		keys := make([]reflect.Value, len(pks))
		for i, pf := range pks {
			keys[i] = reflect.New(pf.IndirectFieldType)
			dest = append(dest, keys[i].Interface())
		}
		if err = rows.Scan(dest...); err != nil {
			db.AddError(err)
			return
		}
		n++
		key := make([]any, len(pks))
		for i := range keys {
			key[i] = keys[i].Elem().Interface()
		}
		for _, e := range byKey[utils.ToStringKey(key...)] {
			db.AddError(f.Set(stmt.Context, e, fromNull(v.Int64, v.Valid)))
		}
	}
	err = rows.Err()
	db.AddError(err)
}
