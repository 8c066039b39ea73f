package version

import (
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// conflict builds the error for a guarded statement that matched too few
// rows, reading the rows again (this costs a query only on failure) to say
// whether each was changed or deleted. It returns nil for Strict's
// zero-version guard of a single row that does not exist: that write
// updated nothing, as GORM's would have.
func conflict(db *gorm.DB, st *state) error {
	var first *ConcurrencyError
	for i, r := range st.rows {
		cur, pk, found, err := reread(db, st, r)
		if st.zero && err == nil {
			switch {
			case found && cur == Null:
				return fmt.Errorf("%w: %s of %s (primary key%s) whose row has a NULL version (it predates the version column), without the version it was read at; "+
					"read the row first (a NULL reads as lockplugin.NullVersion, which guards the write), or backfill the table once: %s",
					ErrZeroVersion, st.op, db.Statement.Table, keyString(r.pk), backfill(db, st.field))
			case found && cur != 0:
				return fmt.Errorf("%w: %s of %s (primary key%s) whose row exists at version %d",
					ErrZeroVersion, st.op, db.Statement.Table, keyString(r.pk), cur)
			case !found && len(st.rows) == 1:
				return nil
			}
		}
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
		if e.PrimaryKey == nil {
			e.PrimaryKey = pk
		}
		if err == nil && found && cur != r.version {
			e.hint = st.assocs.hint(db.Statement.Table, e.PrimaryKey)
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

func keyString(pk []any) string {
	s := ""
	for _, v := range pk {
		s += fmt.Sprintf(" %v", v)
	}
	return s
}

// backfill returns the one statement that gives every row of the statement's
// table whose version is NULL (rows that predate the column) version 1,
// quoted for db's dialect.
func backfill(db *gorm.DB, f *schema.Field) string {
	stmt := &gorm.Statement{DB: db}
	table := db.Statement.Table
	if table == "" {
		table = f.Schema.Table
	}
	stmt.WriteString("UPDATE ")
	stmt.WriteQuoted(clause.Table{Name: table})
	stmt.WriteString(" SET ")
	stmt.WriteQuoted(f.DBName)
	stmt.WriteString(" = 1 WHERE ")
	stmt.WriteQuoted(f.DBName)
	stmt.WriteString(" IS NULL")
	return stmt.SQL.String()
}
