package main

import (
	"fmt"
	"strings"
)

// A check of a library table (lease-no-expiry, lease-backlog,
// holds-backlog) whose query fails reports that it did not run, as
// version-null-unchecked does, unless the table is missing: an
// application that does not use the mechanism has no such table, and
// that is no finding. Before, every failure read as a clean result: a
// table of another shape under the same name, a role without SELECT on
// it, a statement timeout or the database's own syntax (SQL Server's
// LIMIT) each hid a backlog.

// missingTable reports whether err is the database's "no such table"
// error: PostgreSQL's SQLSTATE 42P01, MySQL's and MariaDB's error 1146,
// SQLite's "no such table", SQL Server's error 208 ("Invalid object
// name"). The messages are matched, not the drivers' error types, so that
// doctor needs no driver's package beyond the dialectors it opens with.
func missingTable(err error) bool {
	msg := err.Error()
	for _, s := range []string{"SQLSTATE 42P01", "Error 1146", "no such table", "Invalid object name"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// uncheckedFinding is the finding of check id (what it looks for, in a
// phrase) that failed on table with err, and the query to run by hand.
func uncheckedFinding(id, what, table string, err error, byHand string) *finding {
	return &finding{ID: id + "-unchecked",
		Problem: fmt.Sprintf("could not look for %s in %s: %v", what, table, err),
		Fix:     fmt.Sprintf("check that %s is lockplugin's table and readable by this role, or look by hand: %s", table, byHand)}
}
