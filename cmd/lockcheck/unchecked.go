package main

import "fmt"

// A check of a library table (lease-no-expiry, lease-backlog,
// holds-backlog) whose query fails reports that it did not run, as
// version-null-unchecked does, unless the table is missing
// (dialects.IsUndefinedTable): an application that does not use the
// mechanism has no such table, and that is no finding. Before, every
// failure read as a clean result: a table of another shape under the
// same name, a role without SELECT on it, a statement timeout or the
// database's own syntax (SQL Server's LIMIT) each hid a backlog.

// uncheckedFinding is the finding of check id (what it looks for, in a
// phrase) that failed on table with err, and the query to run by hand.
func uncheckedFinding(id, what, table string, err error, byHand string) *finding {
	return &finding{ID: id + "-unchecked",
		Problem: fmt.Sprintf("could not look for %s in %s: %v", what, table, err),
		Fix:     fmt.Sprintf("check that %s is lockplugin's table and readable by this role, or look by hand: %s", table, byHand)}
}
