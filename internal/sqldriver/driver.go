// Package sqldriver is the seam between lockplugin's mechanisms and the
// databases they run on: the interfaces a database's driver implements, one
// per statement family, and the pure helpers the drivers share.
//
// A mechanism keeps its algorithm (the advisory doubt/clear protocol, holds'
// acquire, the lease table's grant) and asks its family for statements:
// drivers.For(d).Holds(). Each family is a set of pure functions, statement
// in and statement out, so the SQL of every database can be checked against
// a golden file without a server. The implementations live in one folder per
// database under internal/drivers; drivers.For is the only place that asks
// which database a connection is.
//
// A family accessor that returns nil means the database cannot run that
// mechanism; the capability matrix (package dialects) refuses it with
// ErrUnsupported before any family is asked.
package sqldriver

import (
	"time"

	"github.com/lockplugin/lockplugin/dialects"
)

// Driver is one database's statements: the phrasing every family shares,
// and one accessor per statement family.
type Driver interface {
	Phrasing

	// RowLock phrases the row-lock clauses and bounded waits of locking
	// reads (lockplugin's ForUpdate, ForShare, NoWait, SkipLocked, WaitAtMost).
	RowLock() RowLock
	// Advisory phrases the named locks of package advisory.
	Advisory() Advisory
	// Holds phrases the capacity holds of package holds.
	Holds() Holds
	// LeaseTable phrases the lease table store (lease/sqlstore).
	LeaseTable() LeaseTable
	// Claim phrases lockplugin.Claim and its index checks.
	Claim() Claim
	// Reread phrases the re-reads of version and fence columns after a
	// write (internal/version, internal/fence).
	Reread() Reread
}

// Phrasing is what every statement family of a database shares: how it
// writes bind parameters and identifiers, reads its clock, phrases a row
// lock and bounds a lock wait.
type Phrasing interface {
	// Dialect is the database this driver was made for.
	Dialect() dialects.Dialect

	// BindVar is the placeholder of the n-th bind parameter (from 1) for
	// statements sent to database/sql directly rather than through GORM's
	// builder: $n on PostgreSQL, @pn on SQL Server, :n on Oracle, ?
	// elsewhere.
	BindVar(n int) string
	// ReusesBindVars reports whether one numbered placeholder may stand for
	// the same value wherever it appears (PostgreSQL, SQL Server).
	ReusesBindVars() bool
	// BigintBindVar is BindVar for a BIGINT value the statement only
	// compares and adds: typed on PostgreSQL, which would otherwise infer
	// integer from a comparison with 0.
	BigintBindVar(n int) string

	// QuoteIdent quotes an identifier, doubling any quote character in it.
	// Callers validate identifiers first (ValidTableName).
	QuoteIdent(name string) string
	// QuoteTable quotes a table name that may be qualified by a schema,
	// part by part.
	QuoteTable(name string) string

	// NowMillis is an expression for the server's current time in
	// milliseconds since the Unix epoch, as an integer: expiry is judged by
	// the database's clock, which every application server shares.
	NowMillis() string
	// SelectFirst is SELECT cols FROM from WHERE where, stopped after n
	// rows (LIMIT; TOP (n) on SQL Server, FETCH FIRST on Oracle), for a
	// bounded read such as a count capped at n.
	SelectFirst(cols, from, where string, n int) string

	// LockSQL is how the database phrases a row-lock feature (clause
	// keywords, or SQL Server's table hint); "" when it does not support f.
	LockSQL(f dialects.Feature) string
	// LockClauseSQL is how lockplugin's row-lock clauses phrase f: LockSQL,
	// except where the lock modes must be chosen to conflict as FOR UPDATE
	// and FOR SHARE do on PostgreSQL (SQL Server).
	LockClauseSQL(f dialects.Feature) string
	// LatestRead is the clause, with a leading space, that makes a SELECT
	// inside a transaction read the latest committed rows rather than the
	// transaction's snapshot; "" where a plain read already does.
	LatestRead() string

	// Savepoint, RollbackTo and ReleaseSavepoint set, roll back to and
	// release a savepoint named name inside a transaction. ReleaseSavepoint
	// is "" where a savepoint cannot be released and ends with the
	// transaction (SQL Server, Oracle).
	Savepoint(name string) string
	RollbackTo(name string) string
	ReleaseSavepoint(name string) string

	// LockWaitStyle is how the database bounds one statement's lock wait.
	LockWaitStyle() WaitStyle
	// LockWaitSQL is the clause keywords that bound a lock's wait on a
	// WaitInline database ("WAIT 2"), "" elsewhere.
	LockWaitSQL(wait time.Duration) string
}
