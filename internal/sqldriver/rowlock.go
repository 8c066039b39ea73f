package sqldriver

import (
	"time"

	"github.com/lockplugin/lockplugin/dialects"
)

// RowLock phrases the row-lock clauses and bounded waits of locking reads
// (package internal/clauses: ForUpdate, ForShare, NoWait, SkipLocked, Of,
// WaitAtMost, and SQLite's writer lock).
//
// The keywords of each lock feature are the driver's LockClauseSQL, and an
// inline wait bound ("WAIT 2") its LockWaitSQL: the mechanism writes them in
// the standard order (strength, OF, NOWAIT or SKIP LOCKED, WAIT n) after the
// query, unless HintsInFrom.
type RowLock interface {
	// HintsInFrom reports whether the database writes a lock as table
	// hints after each locked table of FROM and its JOINs (SQL Server)
	// rather than as a clause after the query.
	HintsInFrom() bool
	// TableHint is the table hint written after each locked table where
	// HintsInFrom, made of the lock's keywords in order (strength, then
	// NOWAIT or READPAST): " WITH (XLOCK, ROWLOCK, READPAST)".
	TableHint(keywords []string) string

	// StrengthRefusal is the reason given when the database refuses lock
	// strength f, in place of the capability matrix's; "" keeps the
	// matrix's.
	StrengthRefusal(f dialects.Feature) string
	// Refusal says why the database refuses a lock on the query q although
	// its capability rows allow every feature the lock asks for: the
	// feature to name in the error and the reason, or two "" when it runs.
	Refusal(q LockedQuery) (feature, reason string)
	// SkipLockedRefused returns the error that explains err when it is the
	// database refusing SKIP LOCKED at the transaction's isolation level
	// (SQL Server's error 650), for the lock described as lock; nil
	// otherwise. The returned error wraps dialects.ErrUnsupported and err.
	SkipLockedRefused(err error, lock string) error

	// WaitSetter is how the database bounds one query's lock wait with a
	// setting changed before the query and put back after it, on a
	// WaitSetting database; nil elsewhere.
	WaitSetter() WaitSetter
	// WriterLock is SQLite's writer lock, which lockplugin's
	// SQLiteWriterLock option takes in place of row locks; nil where the
	// database has row locks.
	WriterLock() WriterLock
}

// LockedQuery is what a RowLock's Refusal may ask about a locking query.
// Its methods are computed on demand: most databases ask nothing.
type LockedQuery interface {
	// Strength is the lock's strength (dialects.ForUpdate, ...).
	Strength() dialects.Feature
	// SkipLocked reports whether the lock skips locked rows.
	SkipLocked() bool
	// Describe is the lock as the user wrote it, for messages: "FOR
	// UPDATE OF jobs NOWAIT".
	Describe() string
	// Aggregated names what makes the query's rows not table rows
	// ("DISTINCT", "GROUP BY", an aggregate function), or "".
	Aggregated() string
	// RowLimited reports whether the query has a LIMIT or OFFSET.
	RowLimited() bool
}

// Statement is one statement and its arguments.
type Statement struct {
	SQL  string
	Args []any
}

// WaitSetter bounds one query's lock wait with a setting: a statement
// sent before the query changes it and reads the value it had, and one
// sent after the query puts that value back.
type WaitSetter interface {
	// Bound returns the statements that bound the lock wait to wait.
	Bound(wait time.Duration) WaitBound
	// Restore returns the statement that puts back prev, the previous
	// values Bound's Read returned (as text). An error means prev is not
	// a value the database would have returned; nothing may then be sent.
	Restore(prev []string) (WaitRestore, error)
}

// WaitBound is the statements that bound a lock wait, and how their errors
// read.
type WaitBound struct {
	// Read is a query returning one row of Columns values, the first Prev
	// of which are the values to put back after the query.
	Read          Statement
	Columns, Prev int
	// ReadDoing is what Read does, for its error: "setting lock_timeout".
	ReadDoing string
	// Set, when its SQL is not "", is executed after Read: where Read only
	// reads the previous values.
	Set      Statement
	SetDoing string
	// On names the database in errors: "PostgreSQL", "MySQL 8.0.36".
	On string
}

// WaitRestore is the statement that puts a setting back after the query.
type WaitRestore struct {
	Statement
	// Query: send it as a query and read its one value (PostgreSQL's
	// set_config is a SELECT), rather than execute it.
	Query bool
	// Doing is what it does, for its error: `restoring lock_timeout to
	// "0"`; Consequence follows the database's name there: " (the
	// connection keeps the bound)".
	Doing, Consequence string
	// RolledBack: after a failed query a failed restore is no error, since
	// the rollback that must follow puts the value back (PostgreSQL's SET
	// LOCAL, where the error aborted the transaction).
	RolledBack bool
}

// WriterLock phrases SQLite's writer lock: one writer per database, taken
// by a write that changes nothing.
type WriterLock interface {
	// Take is the write that takes the writer lock on table (quoted, as
	// the query names it) and changes nothing.
	Take(table string) string
	// ReadBusyTimeout is a query returning the connection's busy timeout,
	// in milliseconds.
	ReadBusyTimeout() string
	// SetBusyTimeout sets the connection's busy timeout to ms
	// milliseconds; 0 fails a busy lock at once.
	SetBusyTimeout(ms int) string
}

// RowLockDefaults answers every RowLock method as a database that writes
// the standard clause after the query and refuses nothing beyond its
// capability rows does. A driver's row-lock family embeds it and
// overrides what differs.
type RowLockDefaults struct{}

// HintsInFrom is false: the lock is a clause after the query.
func (RowLockDefaults) HintsInFrom() bool { return false }

// TableHint is "": there are no table hints.
func (RowLockDefaults) TableHint([]string) string { return "" }

// StrengthRefusal is "": the capability matrix's reason stands.
func (RowLockDefaults) StrengthRefusal(dialects.Feature) string { return "" }

// Refusal refuses nothing.
func (RowLockDefaults) Refusal(LockedQuery) (feature, reason string) { return "", "" }

// SkipLockedRefused is nil: SKIP LOCKED runs at every isolation level.
func (RowLockDefaults) SkipLockedRefused(error, string) error { return nil }

// WaitSetter is nil: no setting bounds a lock wait.
func (RowLockDefaults) WaitSetter() WaitSetter { return nil }

// WriterLock is nil: the database has row locks.
func (RowLockDefaults) WriterLock() WriterLock { return nil }
