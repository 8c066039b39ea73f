package sqldriver

import (
	"strconv"

	"github.com/lockplugin/lockplugin/dialects"
)

// Standard is the phrasing a database shares with the SQL standard: double
// quotes, the row-lock features' own keywords, a plain read of the latest
// commit, SAVEPOINT / ROLLBACK TO SAVEPOINT / RELEASE SAVEPOINT. A driver
// embeds it and writes only what its database phrases otherwise (its bind
// parameters, its clock, its bounded waits).
//
// Go embedding does not override: Standard's methods call Standard's own
// QuoteIdent and LockSQL, so a driver that phrases either otherwise must
// not embed it (MySQL's backticks, SQL Server's hints).
type Standard struct{ D dialects.Dialect }

// Dialect is the database the driver was made for.
func (s Standard) Dialect() dialects.Dialect { return s.D }

// QuoteIdent quotes with double quotes.
func (Standard) QuoteIdent(name string) string { return Quote(name, `"`, `"`) }

// QuoteTable quotes schema and table, each with double quotes.
func (s Standard) QuoteTable(name string) string { return QuoteParts(name, s.QuoteIdent, nil) }

// LockSQL is the feature's own keywords, where the capability matrix
// allows the feature; "" elsewhere.
func (s Standard) LockSQL(f dialects.Feature) string {
	if !s.D.Supports(f) {
		return ""
	}
	return string(f)
}

// LockClauseSQL is LockSQL.
func (s Standard) LockClauseSQL(f dialects.Feature) string { return s.LockSQL(f) }

// SelectFirst is SELECT ... LIMIT n.
func (Standard) SelectFirst(cols, from, where string, n int) string {
	return "SELECT " + cols + " FROM " + from + " WHERE " + where + " LIMIT " + strconv.Itoa(n)
}

// LatestRead is "": a plain read at READ COMMITTED sees the latest commit.
func (Standard) LatestRead() string { return "" }

// Savepoint is SAVEPOINT name.
func (Standard) Savepoint(name string) string { return "SAVEPOINT " + name }

// RollbackTo is ROLLBACK TO SAVEPOINT name.
func (Standard) RollbackTo(name string) string { return "ROLLBACK TO SAVEPOINT " + name }

// ReleaseSavepoint is RELEASE SAVEPOINT name.
func (Standard) ReleaseSavepoint(name string) string { return "RELEASE SAVEPOINT " + name }
