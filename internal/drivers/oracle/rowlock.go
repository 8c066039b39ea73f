package oracle

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// RowLock is the standard clause (FOR UPDATE NOWAIT, FOR UPDATE WAIT n),
// refused on the queries whose rows Oracle cannot lock.
func (*Driver) RowLock() sqldriver.RowLock { return rowLock{} }

type rowLock struct{ sqldriver.RowLockDefaults }

// Refusal refuses a lock on aggregated rows (ORA-01786) and on a row limit
// (ORA-02014) before anything is sent.
func (rowLock) Refusal(q sqldriver.LockedQuery) (feature, reason string) {
	if what := q.Aggregated(); what != "" {
		return q.Describe() + " on a query with " + what,
			"ORA-01786: Oracle locks rows of a table, and DISTINCT, GROUP BY and aggregate functions (Count included) make rows that are not; lock the rows with a plain query first, then aggregate without a lock in the same transaction"
	}
	if q.RowLimited() {
		return q.Describe() + " with a row limit (First, Take, Last, Limit, Offset)",
			"ORA-02014: Oracle cannot lock the rows of a FETCH FIRST/OFFSET query; select the keys first and lock them with WHERE id IN (...), or use Find without a limit"
	}
	return "", ""
}
