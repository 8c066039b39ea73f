// Package stmtstate holds the two statement chores that every lockplugin
// write guard (version columns, fenced writes) does after GORM ran its
// statement: take back the state it left on the statement, and take its own
// conditions out of WHERE, so that a reused statement starts clean.
package stmtstate

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Put leaves st on stmt under key, for the guard's after-callback. st is
// never built into SQL: the key names no clause GORM builds.
func Put(stmt *gorm.Statement, key string, st clause.Expression) {
	stmt.Clauses[key] = clause.Clause{Expression: st}
}

// Peek returns the state under key without removing it; nil when none.
func Peek(stmt *gorm.Statement, key string) clause.Expression {
	return stmt.Clauses[key].Expression
}

// Take removes the state under key from stmt and returns it; nil when the
// guard did not run on this statement.
func Take(stmt *gorm.Statement, key string) clause.Expression {
	st := Peek(stmt, key)
	delete(stmt.Clauses, key)
	return st
}

// DropWhere removes from stmt's WHERE every expression drop reports as the
// guard's own (the whole WHERE when nothing else is left) and returns the
// expressions kept, in order.
func DropWhere(stmt *gorm.Statement, drop func(clause.Expression) bool) []clause.Expression {
	c, ok := stmt.Clauses["WHERE"]
	if !ok {
		return nil
	}
	w, ok := c.Expression.(clause.Where)
	if !ok {
		return nil
	}
	kept := make([]clause.Expression, 0, len(w.Exprs))
	for _, e := range w.Exprs {
		if !drop(e) {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		delete(stmt.Clauses, "WHERE")
		return nil
	}
	c.Expression = clause.Where{Exprs: kept}
	stmt.Clauses["WHERE"] = c
	return kept
}
