package main

import "testing"

// TestBoundedCountSQL: the backlog checks' bounded count in each
// database's syntax. SQL Server has no server here: its form is checked
// by its text (TOP in a derived table, which T-SQL takes with an alias;
// https://learn.microsoft.com/sql/t-sql/queries/top-transact-sql), the
// others run against their servers in TestDoctorHoldsBacklog and
// TestDoctorLeaseBacklog.
func TestBoundedCountSQL(t *testing.T) {
	for _, c := range []struct{ kind, want string }{
		{"sqlserver", "SELECT COUNT(*) FROM (SELECT TOP (101) 1 AS one FROM t WHERE a < 1) counted"},
		{"postgres", "SELECT COUNT(*) FROM (SELECT 1 AS one FROM t WHERE a < 1 LIMIT 101) counted"},
		{"mysql", "SELECT COUNT(*) FROM (SELECT 1 AS one FROM t WHERE a < 1 LIMIT 101) counted"},
		{"sqlite", "SELECT COUNT(*) FROM (SELECT 1 AS one FROM t WHERE a < 1 LIMIT 101) counted"},
	} {
		if got := boundedCount(c.kind, "t", "a < 1", 101); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.kind, got, c.want)
		}
	}
}
