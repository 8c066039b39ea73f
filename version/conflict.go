package version

import (
	"gorm.io/gorm"
)

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
