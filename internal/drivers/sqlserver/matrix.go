package sqlserver

import "github.com/lockplugin/lockplugin/dialects"

// LockMatrixCell is how the documentation's row-lock matrix shows a lock
// feature f that SQL Server supports: its row locks are table hints, not
// clauses, and FOR UPDATE OF puts the hints on the named tables only.
func (p *Driver) LockMatrixCell(f dialects.Feature) string {
	switch f {
	case dialects.LockOf:
		return "hints on the named tables only"
	case dialects.NoWait, dialects.SkipLocked:
		return "`" + p.LockClauseSQL(f) + "` table hint"
	}
	return "`WITH (" + p.LockClauseSQL(f) + ")`"
}
