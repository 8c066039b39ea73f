package main

import (
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
)

// boundedCount is a query for the number of rows of table that match
// where, counted up to n: the subquery stops reading at n rows
// (sqldriver's SelectFirst: LIMIT, SQL Server's TOP), so a table with a
// larger backlog costs no more than n rows' read. Before it took the
// database's phrasing, both backlog checks sent LIMIT to SQL Server too,
// failed with a syntax error there that doctor read as "no finding", and
// never reported.
func boundedCount(kind, table, where string, n int) string {
	return "SELECT COUNT(*) FROM (" + drivers.For(dialects.New(kind, "")).SelectFirst("1 AS one", table, where, n) + ") counted"
}
