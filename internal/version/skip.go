package version

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// skipKey marks a statement in Statement.Clauses; it is never built.
const skipKey = "lockplugin:skip_version_check"

// SkipVersionCheck returns a clause that drops the version guard from one
// statement, for an administrator's deliberate overwrite:
//
//	db.Clauses(lockplugin.SkipVersionCheck()).Save(&book)
//
// The statement is sent without "AND version = ?" and succeeds whatever the
// row's version; it still increments the version, so that everyone else
// holding the row sees a conflict. The model in memory is left at the
// version it had plus one.
func SkipVersionCheck() clause.Expression { return skipVersionCheck{} }

type skipVersionCheck struct{}

// ModifyStatement marks the statement.
func (skipVersionCheck) ModifyStatement(stmt *gorm.Statement) {
	stmt.Clauses[skipKey] = clause.Clause{}
}

// Build renders nothing.
func (skipVersionCheck) Build(clause.Builder) {}

func skipped(stmt *gorm.Statement) bool {
	_, ok := stmt.Clauses[skipKey]
	return ok
}
