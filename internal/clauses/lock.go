// Package clauses holds lockplugin's row-lock clauses: FOR UPDATE, FOR SHARE
// and PostgreSQL's FOR NO KEY UPDATE and FOR KEY SHARE, with NOWAIT, SKIP
// LOCKED and OF, rendered for each database by the builders that Register
// installs. It is internal: the root lockplugin package re-exports the
// clauses, options and errors, and its doc comments are the documentation
// users read; keep them in step with this package's.
//
// A lock is a GORM clause named "FOR", like GORM's own clause.Locking, so
// that tools that look for that name (gorm.io/plugin/dbresolver sends such
// reads to the primary) keep working. Unlike clause.Locking it is never
// dropped or mistranslated: a database that cannot take the lock makes the
// query fail with dialects.ErrUnsupported before any SQL is sent.
package clauses

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/dialects"
)

// clauseName is the GORM clause name of every row lock. dbresolver routes
// statements carrying it to the primary.
const clauseName = "FOR"

// maxIdentLen bounds a table name given to Of; no database lockplugin
// speaks to accepts longer identifiers (SQL Server: 128).
const maxIdentLen = 128

// LockOption changes how a lock behaves: NoWait, SkipLocked, Of,
// WaitAtMost.
type LockOption interface {
	applyLock(*lock)
}

// WaitPolicy says what a lock does when a row it wants is already locked by
// someone else. Without one, the query waits for the other transaction.
type WaitPolicy int

const (
	// NoWait fails the query at once with ErrLockNotAvailable instead of
	// waiting (NOWAIT; the NOWAIT table hint on SQL Server).
	NoWait WaitPolicy = iota + 1
	// SkipLocked leaves out rows that others have locked (SKIP LOCKED; the
	// READPAST table hint on SQL Server): the work-queue claim.
	SkipLocked
)

// String returns the SQL name of the policy.
func (w WaitPolicy) String() string {
	switch w {
	case NoWait:
		return string(dialects.NoWait)
	case SkipLocked:
		return string(dialects.SkipLocked)
	}
	return fmt.Sprintf("WaitPolicy(%d)", int(w))
}

func (w WaitPolicy) applyLock(l *lock) {
	switch w {
	case NoWait:
		l.noWait = true
	case SkipLocked:
		l.skipLocked = true
	default:
		l.fail(fmt.Errorf("%w: unknown wait policy %d", ErrInvalidLock, int(w)))
	}
}

// ofTables is the option Of returns.
type ofTables struct {
	names []string
	err   error
}

func (o ofTables) applyLock(l *lock) {
	l.fail(o.err)
	l.of = append(l.of, o.names...)
}

// Of limits the lock to the named tables (or their aliases) of a query
// with joins: FOR UPDATE OF on PostgreSQL and MySQL 8, and table hints on
// those tables only on SQL Server. Where OF is not supported, Of naming
// the query's one table (its name, alias, or clause.CurrentTable) is sent
// without OF, since it locks the same rows; any other Of there fails with
// ErrUnsupported. Names are quoted, never spliced in as SQL; an empty name,
// a dotted name or a name with control characters makes the query fail
// with ErrInvalidLock before anything is sent.
func Of(tables ...string) LockOption {
	o := ofTables{names: append([]string(nil), tables...)}
	if len(tables) == 0 {
		o.err = fmt.Errorf("%w: Of needs at least one table name", ErrInvalidLock)
	}
	for _, t := range tables {
		if err := validTableName(t); err != nil {
			o.err = err
			break
		}
	}
	return o
}

func validTableName(name string) error {
	switch {
	case name == clause.CurrentTable:
		return nil
	case name == "":
		return fmt.Errorf("%w: empty table name in Of", ErrInvalidLock)
	case len(name) > maxIdentLen:
		return fmt.Errorf("%w: table name in Of is %d bytes long, more than %d", ErrInvalidLock, len(name), maxIdentLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: table name %q in Of is not valid UTF-8", ErrInvalidLock, name)
	case strings.Contains(name, "."):
		return fmt.Errorf("%w: table name %q in Of is qualified; name the table or its alias as it appears in FROM", ErrInvalidLock, name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: table name %q in Of contains a control character", ErrInvalidLock, name)
		}
	}
	return nil
}

// lock is the clause that ForUpdate and its siblings return. It is a value:
// options are applied once, when it is made.
type lock struct {
	strength   dialects.Feature
	noWait     bool
	skipLocked bool
	of         []string
	// wait is WaitAtMost's bound; 0 waits as long as the database does.
	wait time.Duration
	// err is the first bad option, reported when the query runs (a clause
	// constructor has no error to return).
	err error
}

func newLock(strength dialects.Feature, opts []LockOption) lock {
	l := lock{strength: strength}
	for _, o := range opts {
		if o != nil {
			o.applyLock(&l)
		}
	}
	return l
}

func (l *lock) fail(err error) {
	if l.err == nil {
		l.err = err
	}
}

// ForUpdate locks the selected rows against other writers and other
// FOR UPDATE readers until the transaction ends. Use it inside a
// transaction:
//
//	db.Transaction(func(tx *gorm.DB) error {
//		tx.Clauses(clauses.ForUpdate()).First(&account, id)
//		...
//	})
func ForUpdate(opts ...LockOption) clause.Expression {
	return newLock(dialects.ForUpdate, opts)
}

// ForShare locks the selected rows against writers but lets other FOR SHARE
// readers in (FOR SHARE; LOCK IN SHARE MODE on MariaDB and MySQL before
// 8.0.1; REPEATABLEREAD, ROWLOCK on SQL Server). Oracle and SQLite refuse
// it.
func ForShare(opts ...LockOption) clause.Expression {
	return newLock(dialects.ForShare, opts)
}

// ForNoKeyUpdate is PostgreSQL's weaker FOR UPDATE, which still lets other
// transactions insert rows referencing the locked ones. Other databases
// refuse it with ErrUnsupported.
func ForNoKeyUpdate(opts ...LockOption) clause.Expression {
	return newLock(dialects.ForNoKeyUpdate, opts)
}

// ForKeyShare is PostgreSQL's weakest row lock: it only keeps the key from
// changing. Other databases refuse it with ErrUnsupported.
func ForKeyShare(opts ...LockOption) clause.Expression {
	return newLock(dialects.ForKeyShare, opts)
}

// Name returns "FOR", the clause name GORM and dbresolver know.
func (l lock) Name() string { return clauseName }

// MergeClause replaces any lock already on the statement, as GORM does for
// clause.Locking, and routes the clause to lockplugin's builder whatever
// builder the dialector installed for "FOR".
func (l lock) MergeClause(c *clause.Clause) {
	c.Expression = l
	c.Builder = buildForFallback
}

// Build is reached only when the lock is used as a plain expression
// (for example as a bind value of Raw SQL) rather than as a clause; that
// would send it unvalidated, so it is an error.
func (l lock) Build(b clause.Builder) {
	_ = b.AddError(fmt.Errorf("%w: %s is a clause: pass it to db.Clauses, not as a value or into Raw SQL", ErrInvalidLock, l.strength))
}

// String describes the lock as PostgreSQL would write it, for messages.
// GORM's clause.CurrentTable in Of reads "the query's table"; describe
// names the table itself.
func (l lock) String() string { return l.describe(nil) }

// describe writes the lock as the user wrote it, for messages: "FOR SHARE
// OF jobs NOWAIT". Of(clause.CurrentTable) names stmt's table, so that
// GORM's internal placeholder never reaches a message.
func (l lock) describe(stmt *gorm.Statement) string {
	s := string(l.strength)
	if len(l.of) > 0 {
		s += " OF " + strings.Join(l.ofNames(stmt), ", ")
	}
	if l.noWait {
		s += " " + string(dialects.NoWait)
	}
	if l.skipLocked {
		s += " " + string(dialects.SkipLocked)
	}
	if l.wait > 0 {
		s += " " + waitPhrase(l.wait)
	}
	return s
}

// ofNames returns l.of with clause.CurrentTable replaced by the statement's
// table name.
func (l lock) ofNames(stmt *gorm.Statement) []string {
	out := make([]string, len(l.of))
	for i, name := range l.of {
		switch {
		case name != clause.CurrentTable:
			out[i] = name
		case stmt != nil && stmt.Table != "":
			out[i] = stmt.Table
		default:
			out[i] = "the query's table"
		}
	}
	return out
}

// phrase names the part of l that feature f stands for, as the user wrote
// it: the strength for a strength, "FOR SHARE NOWAIT" for NOWAIT, "FOR
// SHARE OF jobs" for OF. An error about OF on a share lock must not call
// it FOR UPDATE OF, which is only the feature's name in the matrix.
func (l lock) phrase(f dialects.Feature, stmt *gorm.Statement) string {
	switch f {
	case dialects.NoWait, dialects.SkipLocked:
		return string(l.strength) + " " + string(f)
	case dialects.LockOf:
		return string(l.strength) + " OF " + strings.Join(l.ofNames(stmt), ", ")
	case dialects.LockWait:
		return string(l.strength) + " " + waitPhrase(l.wait)
	}
	return string(f)
}

// NoLock removes any lock from the statement it is added to, so that a
// query built once with a lock can be reused without one. Build the query
// with a Session so that it can be reused at all (without one, its first use
// consumes the statement, lock and table included):
//
//	q := tx.Model(&Job{}).Clauses(clauses.ForUpdate()).Where("state = ?", "queued").Session(&gorm.Session{})
//	err := q.Clauses(clauses.NoLock()).Count(&n).Error // no lock
//	err = q.Find(&jobs).Error                           // still locked
func NoLock() clause.Expression { return noLock{} }

type noLock struct{}

// ModifyStatement deletes the statement's "FOR" clause (ours or GORM's).
func (noLock) ModifyStatement(stmt *gorm.Statement) { delete(stmt.Clauses, clauseName) }

// Build writes nothing: NoLock acts through ModifyStatement.
func (noLock) Build(clause.Builder) {}

// lockFromClause returns the lock a "FOR" clause asks for. GORM's own
// clause.Locking is translated, so that it is validated and rendered per
// database instead of being dropped (SQLite) or mistranslated (SQL Server,
// MariaDB). ok is false for an expression lockplugin does not know.
func lockFromClause(c clause.Clause) (l lock, converted, ok bool) {
	switch e := c.Expression.(type) {
	case lock:
		return e, false, true
	case clause.Locking:
		return fromLocking(e), true, true
	}
	return lock{}, false, false
}

func fromLocking(g clause.Locking) lock {
	var l lock
	switch strings.ToUpper(strings.TrimSpace(g.Strength)) {
	case clause.LockingStrengthUpdate:
		l.strength = dialects.ForUpdate
	case clause.LockingStrengthShare:
		l.strength = dialects.ForShare
	case "NO KEY UPDATE":
		l.strength = dialects.ForNoKeyUpdate
	case "KEY SHARE":
		l.strength = dialects.ForKeyShare
	default:
		l.strength = dialects.ForUpdate
		l.fail(fmt.Errorf("%w: clause.Locking strength %q is not one lockplugin knows", ErrInvalidLock, g.Strength))
	}
	switch strings.ToUpper(strings.TrimSpace(g.Options)) {
	case "":
	case clause.LockingOptionsNoWait:
		l.noWait = true
	case clause.LockingOptionsSkipLocked:
		l.skipLocked = true
	default:
		l.fail(fmt.Errorf("%w: clause.Locking options %q are not ones lockplugin knows", ErrInvalidLock, g.Options))
	}
	if name := g.Table.Alias; name != "" {
		Of(name).applyLock(&l)
	} else if g.Table.Name != "" {
		Of(g.Table.Name).applyLock(&l)
	}
	return l
}
