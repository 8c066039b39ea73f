package drivers

import "github.com/lockplugin/lockplugin/dialects"

// LockMatrix renders the row-lock matrix of the documentation
// (docs/databases.md): for each database of dialects.Profiles, what its
// driver sends for each lock feature, or "error" where lockplugin refuses
// it with ErrUnsupported. tests/docs fails when the page and this differ.
func LockMatrix() dialects.Table {
	cols := []dialects.Feature{
		dialects.ForUpdate, dialects.ForShare, dialects.NoWait, dialects.SkipLocked,
		dialects.LockOf, dialects.LockWait, dialects.ForNoKeyUpdate,
	}
	t := dialects.Table{Header: []string{"database"}}
	for _, c := range cols {
		t.Header = append(t.Header, string(c))
	}
	for _, p := range dialects.Profiles() {
		row := []string{p.Label}
		for _, c := range cols {
			row = append(row, lockCell(p.Dialect, c))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// lockCeller is a driver whose row locks the matrix shows in its own way:
// SQL Server's, which are table hints rather than clauses.
type lockCeller interface {
	// LockMatrixCell is the cell of a supported lock feature f.
	LockMatrixCell(f dialects.Feature) string
}

func lockCell(d dialects.Dialect, f dialects.Feature) string {
	if !d.Supports(f) {
		switch {
		case d.Supports(dialects.WriterLock) && f != dialects.ForNoKeyUpdate && f != dialects.LockWait:
			return "error (opt-in: writer lock)"
		case f == dialects.LockOf && d.Supports(dialects.ForUpdate):
			return "error, except OF the query's one table (sent without OF)"
		}
		return "error"
	}
	if f == dialects.LockWait {
		return d.Note(f)
	}
	dr := For(d)
	if c, ok := dr.(lockCeller); ok {
		return c.LockMatrixCell(f)
	}
	switch f {
	case dialects.NoWait, dialects.SkipLocked, dialects.LockOf:
		return "yes"
	}
	return "`" + dr.LockClauseSQL(f) + "`"
}
