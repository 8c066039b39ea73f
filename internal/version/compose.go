package version

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// IsCondition reports whether e is the version guard's own WHERE
// condition, for the fence check (internal/fence), which reads a row again
// by the statement's conditions without it.
func IsCondition(e clause.Expression) bool {
	_, ok := e.(versionCond)
	return ok
}

// Guarded reports whether the statement carries the version guard's
// state (between the guard and the check callbacks).
func Guarded(stmt *gorm.Statement) bool {
	_, ok := stmt.Clauses[stateKey]
	return ok
}
