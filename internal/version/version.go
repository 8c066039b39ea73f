package version

import (
	"context"
	"fmt"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/lockplugin/lockplugin/internal/plugin"
)

// Version is an optimistic-locking version column. Embed it in a model
// (column "version") or declare a named field of this type with any column
// name:
//
//	type Book struct {
//		ID    uint
//		Title string
//		lockplugin.Version
//	}
//
//	type Invoice struct {
//		ID  uint
//		Rev lockplugin.Version `gorm:"column:lock_version"`
//	}
//
// Create writes 1, or keeps a non-zero value already set. Updates and
// deletes of a loaded model are guarded by it (see the package doc).
//
// A Version is a plain int64 to database/sql, to every driver and to
// encoding/json (a JSON number), and it deliberately has no Scan, Value or
// MarshalJSON method: the methods of an embedded field are promoted to the
// model, and GORM treats a model that is a driver.Valuer as a single value
// (in Where(&book) conditions, and as a column instead of a relationship),
// while encoding/json would marshal a model that is a json.Marshaler as its
// version alone.
//
// A NULL read from the column (a row that existed before the column was
// added without a default) scans as Null, not as 0, so that a write of that
// row is guarded by "version IS NULL" instead of being taken for a write
// without a version.
type Version int64

// Null is the value a Version holds when its row's column is NULL: a row
// that predates the version column. A model read at Null is loaded: its
// write is guarded by "version IS NULL" and leaves version 1. It is -1 so
// that it survives encoding/json and a round trip through a client like
// any other version; a version the database writes is never negative.
const Null Version = -1

var versionType = reflect.TypeOf(Version(0))

// after returns the version a row read at v holds after delta increments
// ("COALESCE(version, 0) + 1" makes a NULL version 1).
func after(v, delta Version) Version {
	if delta == 0 {
		return v
	}
	if v == Null {
		v = 0
	}
	return v + delta
}

// fromNull converts a version read as sql.NullInt64.
func fromNull(v int64, valid bool) Version {
	if !valid {
		return Null
	}
	return Version(v)
}

// CreateClauses implements schema.CreateClausesInterface: GORM calls it
// once per model field of this type and adds the returned clause to every
// INSERT of the model. The clause sets the initial version and fails the
// statement when the plugin is not registered on the *gorm.DB.
//
// It is also the one place where lockplugin sees the field as GORM parses
// the model, so it shapes the column there (see shape).
func (Version) CreateClauses(f *schema.Field) []clause.Interface {
	c := clausesFor(f, opCreate)
	if c != nil {
		shape(f)
	}
	return c
}

// shape makes the column AutoMigrate creates "DEFAULT 1" (unless the
// field's tag gives a default of its own), so that adding a version column
// to a table that has rows starts every row at version 1 instead of NULL,
// on PostgreSQL, MySQL/MariaDB and SQLite alike. It does not make the
// column NOT NULL: on a column an older lockplugin added (nullable, with
// NULL rows) GORM's AutoMigrate would then send an ALTER that the database
// refuses, failing the application's start on upgrade, while NULL rows are
// guarded anyway (see Null). It also makes a NULL scan as
// Null: GORM scans an int64 field through a **Version, which is nil for a
// NULL, and would otherwise set 0.
//
// Methods (GormDataType, GormDBDataType) cannot do this: the methods of an
// embedded Version are promoted to the model, and GORM would take every
// struct embedding one for a column type.
func shape(f *schema.Field) {
	if !f.HasDefaultValue || (f.DefaultValue == "" && f.DefaultValueInterface == nil) {
		f.HasDefaultValue, f.DefaultValue, f.DefaultValueInterface = true, "1", int64(1)
	}
	set := f.Set
	if set == nil {
		return
	}
	f.Set = func(ctx context.Context, rv reflect.Value, v interface{}) error {
		if p, ok := v.(**Version); ok && p != nil && *p == nil {
			return set(ctx, rv, Null)
		}
		return set(ctx, rv, v)
	}
}

// UpdateClauses implements schema.UpdateClausesInterface. The clause fails
// an UPDATE of the model when the plugin is not registered on the *gorm.DB,
// so that a versioned model is never written unguarded; the guard itself is
// a callback that Register installs.
func (Version) UpdateClauses(f *schema.Field) []clause.Interface {
	return clausesFor(f, opUpdate)
}

// DeleteClauses implements schema.DeleteClausesInterface, like
// UpdateClauses for DELETE (and soft delete).
func (Version) DeleteClauses(f *schema.Field) []clause.Interface {
	return clausesFor(f, opDelete)
}

type opKind uint8

const (
	opCreate opKind = iota + 1
	opUpdate
	opDelete
)

func (o opKind) String() string {
	switch o {
	case opCreate:
		return "create"
	case opUpdate:
		return "update"
	}
	return "delete"
}

// clausesFor returns the field's clause, or none when f is not a Version
// field: the methods above are promoted to every struct that embeds a
// Version, so GORM also offers them the fields whose type is such a struct
// (a belongs-to or has-one relationship), which must stay untouched.
func clausesFor(f *schema.Field, op opKind) []clause.Interface {
	if f == nil || f.IndirectFieldType != versionType {
		return nil
	}
	return []clause.Interface{fieldClause{field: f, op: op}}
}

// fieldClause is added by GORM to every INSERT, UPDATE and DELETE of a
// versioned model. It never renders SQL.
type fieldClause struct {
	field *schema.Field
	op    opKind
}

// Name returns "": the clause is applied through ModifyStatement and never
// stored in Statement.Clauses.
func (fieldClause) Name() string { return "" }

// Build renders nothing.
func (fieldClause) Build(clause.Builder) {}

// MergeClause does nothing.
func (fieldClause) MergeClause(*clause.Clause) {}

// ModifyStatement fails the statement before any SQL is sent when the
// plugin is not registered on the *gorm.DB, or when the field is not a
// plain Version. (The registered callbacks do the actual work.)
func (c fieldClause) ModifyStatement(stmt *gorm.Statement) {
	if stmt.DB.Callback().Update().Get(guardName) == nil {
		stmt.AddError(fmt.Errorf("%w: %s of %s", plugin.ErrNotRegistered, c.op, modelName(stmt)))
		return
	}
	if c.field.FieldType != versionType {
		stmt.AddError(fmt.Errorf("lockplugin: %s.%s is a %s; declare the version field as lockplugin.Version, not a pointer",
			c.field.Schema.Name, c.field.Name, c.field.FieldType))
	}
}

// setInitial writes version 1 into every created row whose version is zero.
func setInitial(stmt *gorm.Statement, f *schema.Field) {
	switch dest := stmt.Dest.(type) {
	case map[string]interface{}:
		setInitialMap(dest, f)
		return
	case *map[string]interface{}:
		setInitialMap(*dest, f)
		return
	case []map[string]interface{}:
		for _, m := range dest {
			setInitialMap(m, f)
		}
		return
	case *[]map[string]interface{}:
		for _, m := range *dest {
			setInitialMap(m, f)
		}
		return
	}
	rv := stmt.ReflectValue
	switch rv.Kind() {
	case reflect.Struct:
		setInitialStruct(stmt, f, rv)
	case reflect.Slice, reflect.Array:
		for i := 0; i < rv.Len(); i++ {
			if e := reflect.Indirect(rv.Index(i)); e.Kind() == reflect.Struct {
				setInitialStruct(stmt, f, e)
			}
		}
	}
}

func setInitialStruct(stmt *gorm.Statement, f *schema.Field, rv reflect.Value) {
	if v, _ := versionOf(stmt, f, rv); v != 0 && v != Null {
		return
	}
	if !rv.CanAddr() {
		stmt.AddError(fmt.Errorf("%w: lockplugin: create a versioned %s from a pointer, so that its version can be set", gorm.ErrInvalidValue, f.Schema.Name))
		return
	}
	stmt.AddError(f.Set(stmt.Context, rv, Version(1)))
}

func setInitialMap(m map[string]interface{}, f *schema.Field) {
	for _, k := range []string{f.DBName, f.Name} {
		if v, ok := m[k]; ok {
			if n, ok := asInt64(v); !ok || (n != 0 && n != int64(Null)) {
				return
			}
			m[k] = int64(1)
			return
		}
	}
	m[f.DBName] = int64(1)
}

func asInt64(v interface{}) (int64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(rv.Uint()), true
	}
	return 0, false
}

// versionOf reads the version of one struct value.
func versionOf(stmt *gorm.Statement, f *schema.Field, rv reflect.Value) (Version, error) {
	v, _ := f.ValueOf(stmt.Context, rv)
	if n, ok := v.(Version); ok {
		return n, nil
	}
	return 0, fmt.Errorf("lockplugin: %s.%s is not a lockplugin.Version", f.Schema.Name, f.Name)
}

// versionField returns the model's version field, found through the
// clauses GORM collected for op, or nil when the model has none.
func versionField(s *schema.Schema, op opKind) (*schema.Field, error) {
	var list []clause.Interface
	switch op {
	case opCreate:
		list = s.CreateClauses
	case opUpdate:
		list = s.UpdateClauses
	default:
		list = s.DeleteClauses
	}
	var found *schema.Field
	for _, c := range list {
		if fc, ok := c.(fieldClause); ok {
			if found != nil && found != fc.field {
				return nil, fmt.Errorf("lockplugin: %s has two version fields, %s and %s; keep one", s.Name, found.Name, fc.field.Name)
			}
			found = fc.field
		}
	}
	if found != nil && found.FieldType != versionType {
		return nil, fmt.Errorf("lockplugin: %s.%s is a %s; declare the version field as lockplugin.Version, not a pointer",
			s.Name, found.Name, found.FieldType)
	}
	return found, nil
}

func modelName(stmt *gorm.Statement) string {
	if stmt.Schema != nil {
		return stmt.Schema.Name
	}
	return stmt.Table
}
