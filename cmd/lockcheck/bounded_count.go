package main

import "fmt"

// boundedCount is a query for the number of rows of table that match
// where, counted up to n: the subquery stops reading at n rows, so a
// table with a larger backlog costs no more than n rows' read. SQL Server
// has no LIMIT: its subquery takes TOP (n). Before it did, both backlog
// checks failed there with a syntax error that doctor read as "no
// finding", and never reported.
func boundedCount(kind, table, where string, n int) string {
	if kind == "sqlserver" {
		return fmt.Sprintf("SELECT COUNT(*) FROM (SELECT TOP (%d) 1 AS one FROM %s WHERE %s) AS counted", n, table, where)
	}
	return fmt.Sprintf("SELECT COUNT(*) FROM (SELECT 1 AS one FROM %s WHERE %s LIMIT %d) AS counted", table, where, n)
}
