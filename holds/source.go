package holds

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// dbresolverWrite is the statement setting under which
// gorm.io/plugin/dbresolver sends a statement to a source, as its
// dbresolver.Write clause sets it; dbresolverCallback is the name its
// pool-switching callbacks are registered under. Named here so that the
// root module does not import dbresolver.
const (
	dbresolverWrite    = "gorm:db_resolver:write"
	dbresolverCallback = "gorm:db_resolver"
)

// toSource is a clause that sends the statement it is added to where
// writes go: every read of holds decides or reports a grant, and a replica
// that lags (or is empty) would answer for a past that no longer holds. It
// is dbresolver.Write, without the import; without dbresolver it does
// nothing.
type toSource struct{}

// ModifyStatement marks the statement for the source and, as dbresolver's
// own clause does, lets dbresolver switch the statement's pool at once, so
// that a transaction begun on it begins on the source.
func (toSource) ModifyStatement(stmt *gorm.Statement) {
	stmt.Settings.Store(dbresolverWrite, struct{}{})
	if fc := stmt.DB.Callback().Query().Get(dbresolverCallback); fc != nil {
		fc(stmt.DB)
	}
}

// Build adds nothing to the SQL.
func (toSource) Build(clause.Builder) {}

// source returns a new statement of db that goes to the source.
func source(db *gorm.DB) *gorm.DB { return db.Clauses(toSource{}) }
