package version

import (
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// emptyJoins runs after gorm:query. A relation loaded by Joins that
// matched no row (a LEFT JOIN's NULLs) is left by GORM as the zero value of
// its struct, but its version column was NULL too and scanned as Null:
// give such a relation, whose primary key is zero, version 0 again, so that
// it stays the empty struct GORM makes of it.
func emptyJoins(db *gorm.DB) {
	stmt := db.Statement
	if db.Error != nil || stmt.Schema == nil || len(stmt.Joins) == 0 {
		return
	}
	for _, j := range stmt.Joins {
		if strings.ContainsAny(j.Name, " (") {
			continue // a JOIN clause written out, not a relation
		}
		emptyAlong(stmt, stmt.ReflectValue, stmt.Schema, strings.Split(j.Name, "."))
	}
}

func emptyAlong(stmt *gorm.Statement, rv reflect.Value, s *schema.Schema, path []string) {
	rv = reflect.Indirect(rv)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		for i := 0; i < rv.Len(); i++ {
			emptyAlong(stmt, rv.Index(i), s, path)
		}
		return
	case reflect.Struct:
	default:
		return
	}
	rel := s.Relationships.Relations[path[0]]
	if rel == nil || rel.FieldSchema == nil {
		return
	}
	fv := reflect.Indirect(rel.Field.ReflectValueOf(stmt.Context, rv))
	if fv.Kind() != reflect.Struct || !fv.CanAddr() {
		return
	}
	if f, err := versionField(rel.FieldSchema, opUpdate); err == nil && f != nil {
		empty := len(rel.FieldSchema.PrimaryFields) > 0
		for _, pf := range rel.FieldSchema.PrimaryFields {
			if _, zero := pf.ValueOf(stmt.Context, fv); !zero {
				empty = false
			}
		}
		if v, _ := versionOf(stmt, f, fv); empty && v == Null {
			stmt.AddError(f.Set(stmt.Context, fv, Version(0)))
		}
	}
	if len(path) > 1 {
		emptyAlong(stmt, fv, rel.FieldSchema, path[1:])
	}
}
