package holds

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// Column sizes of the holds table.
const (
	maxKeyLen    = 191 // resource_type, resource_id
	maxHolderLen = 255 // holder
)

// resource is a Holdable resolved against its GORM schema.
type resource struct {
	model Holdable
	sch   *schema.Schema
	value reflect.Value // the struct the model points to
	table string        // unquoted table name
	key   string        // primary key column
	pk    any           // primary key value, bound as it is
	id    string        // primary key value as a string
}

// resolve finds a resource's table and primary key. The table is the
// model's, or the one named with db.Table.
func resolve(ctx context.Context, db *gorm.DB, model Holdable) (resource, error) {
	rv := reflect.ValueOf(model)
	if model == nil || (rv.Kind() == reflect.Pointer && rv.IsNil()) {
		return resource{}, fmt.Errorf("%w: nil resource", ErrInvalid)
	}
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(model); err != nil {
		return resource{}, fmt.Errorf("%w: resource %T is not a GORM model: %v", ErrInvalid, model, err)
	}
	sch := stmt.Schema
	if len(sch.PrimaryFields) != 1 {
		return resource{}, fmt.Errorf("%w: resource %T needs exactly one primary key column, it has %d", ErrInvalid, model, len(sch.PrimaryFields))
	}
	field := sch.PrimaryFields[0]
	value := reflect.Indirect(rv)
	pk, zero := field.ValueOf(ctx, value)
	if zero {
		return resource{}, fmt.Errorf("%w: resource %T has a zero primary key (%s): save it first", ErrInvalid, model, field.DBName)
	}
	table := sch.Table
	if te := db.Statement.TableExpr; te != nil {
		// db.Table names the resource table. GORM keeps anything but a
		// plain name ("x; DROP ...", "rooms r", "a.b") as raw SQL, with
		// Table empty or only a part of it: refuse it, rather than fall
		// back to the model's own table and hold a resource the caller did
		// not name.
		t := db.Statement.Table
		if t == "" || len(te.Vars) > 0 || te.SQL != db.Statement.Quote(t) {
			return resource{}, fmt.Errorf("%w: db.Table(%s): name the resource table with a plain table name, or a model whose TableName has the schema", ErrInvalid, capQuote(te.SQL))
		}
		table = t
	} else if t := db.Statement.Table; t != "" {
		table = t
	}
	id, err := keyString(pk)
	if err != nil {
		return resource{}, fmt.Errorf("%w: resource %T primary key: %v", ErrInvalid, model, err)
	}
	switch {
	case table == "":
		return resource{}, fmt.Errorf("%w: resource %T has no table name", ErrInvalid, model)
	case len(table) > maxKeyLen:
		return resource{}, fmt.Errorf("%w: resource table name %q is longer than %d bytes", ErrInvalid, table, maxKeyLen)
	case len(id) > maxKeyLen:
		return resource{}, fmt.Errorf("%w: resource %T primary key %q is longer than %d bytes", ErrInvalid, model, id, maxKeyLen)
	}
	return resource{model: model, sch: sch, value: value, table: table, key: field.DBName, pk: pk, id: id}, nil
}

// keyString is the string form of a primary key value, as stored in
// resource_id: what the value's driver.Valuer gives (bytes in hex), else its
// String, else fmt's default format.
func keyString(v any) (string, error) {
	if dv, ok := v.(driver.Valuer); ok {
		x, err := dv.Value()
		if err != nil {
			return "", err
		}
		v = x
	}
	switch x := v.(type) {
	case []byte:
		return hex.EncodeToString(x), nil
	case fmt.Stringer:
		return x.String(), nil
	}
	return fmt.Sprint(v), nil
}

// fresh returns a copy of the resource to read its row into: columns the
// database stores are overwritten, other fields keep the caller's values.
func (r resource) fresh() any {
	p := reflect.New(r.value.Type())
	p.Elem().Set(r.value)
	return p.Interface()
}

// scan reads the first row of rows (SELECT * of the resource's table) into
// a fresh copy of the resource, as GORM's Scan would: columns the model
// maps are set through its schema, others skipped. nil when there is no
// row.
func (r resource) scan(ctx context.Context, rows *sql.Rows) (Holdable, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	p := reflect.ValueOf(r.fresh())
	fields := make([]*schema.Field, len(cols))
	dest := make([]any, len(cols))
	for i, col := range cols {
		if f := r.sch.LookUpField(col); f != nil && f.Readable {
			fields[i] = f
			dest[i] = f.NewValuePool.Get()
		} else {
			dest[i] = new(sql.RawBytes)
		}
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, err
	}
	for i, f := range fields {
		if f == nil {
			continue
		}
		err := f.Set(ctx, p.Elem(), dest[i])
		f.NewValuePool.Put(dest[i])
		if err != nil {
			return nil, err
		}
	}
	h, ok := p.Interface().(Holdable)
	if !ok {
		// HoldCapacity has a value receiver the pointer has too; a
		// pointer receiver is on p itself. Either way p is Holdable.
		return nil, fmt.Errorf("%w: %T does not implement Holdable", ErrInvalid, p.Interface())
	}
	return h, nil
}

func checkHolder(holder string) error {
	switch {
	case holder == "":
		return fmt.Errorf("%w: empty holder", ErrInvalid)
	case len(holder) > maxHolderLen:
		return fmt.Errorf("%w: holder is %d bytes, at most %d", ErrInvalid, len(holder), maxHolderLen)
	case !utf8.ValidString(holder):
		return fmt.Errorf("%w: holder is not valid UTF-8", ErrInvalid)
	case strings.IndexByte(holder, 0) >= 0:
		// PostgreSQL refuses NUL in text, and elsewhere it would cut the
		// holder short in C-string tools: refused everywhere alike.
		return fmt.Errorf("%w: holder %s contains a NUL byte", ErrInvalid, capQuote(holder))
	}
	return nil
}

// capQuote quotes s for an error message, cut to 64 bytes.
func capQuote(s string) string {
	if len(s) <= 64 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...(%d bytes)", s[:64], len(s))
}
