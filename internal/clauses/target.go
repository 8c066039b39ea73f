package clauses

import (
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/dialects"
)

// lockFeatures are the dialects features a lock can need.
var lockFeatures = [...]dialects.Feature{
	dialects.ForUpdate, dialects.ForShare, dialects.ForNoKeyUpdate, dialects.ForKeyShare,
	dialects.NoWait, dialects.SkipLocked, dialects.LockOf, dialects.LockWait,
}

// target is what the lock builders need to know about one database,
// worked out once from dialects when the plugin is registered, so that
// building a query does not scan the capability matrix again.
type target struct {
	d dialects.Dialect
	// refusal holds the *dialects.UnsupportedError of each feature the
	// database cannot do.
	refusal map[dialects.Feature]*dialects.UnsupportedError
	// keyword holds how the database phrases each feature it can do.
	keyword map[dialects.Feature]string
	// writerLock is set on SQLite with Config.SQLiteWriterLock: FOR
	// UPDATE and FOR SHARE take the database's writer lock instead of row
	// locks, and write no SQL of their own.
	writerLock bool
}

func newTarget(d dialects.Dialect, cfg Config) *target {
	t := &target{
		d:       d,
		refusal: make(map[dialects.Feature]*dialects.UnsupportedError, len(lockFeatures)),
		keyword: make(map[dialects.Feature]string, len(lockFeatures)),
	}
	for _, f := range lockFeatures {
		if err := d.Require(f); err != nil {
			var ue *dialects.UnsupportedError
			if !errors.As(err, &ue) {
				ue = &dialects.UnsupportedError{Dialect: d.String(), Feature: string(f), Reason: err.Error()}
			}
			t.refusal[f] = ue
		} else {
			t.keyword[f] = d.LockClauseSQL(f)
		}
	}
	if cfg.SQLiteWriterLock && d.Supports(dialects.WriterLock) {
		t.writerLock = true
		// The writer lock is stronger than any row lock: NOWAIT is a
		// busy timeout of 0 while it is taken, and SKIP LOCKED skips
		// nothing, since no one else can hold a row.
		for _, f := range []dialects.Feature{dialects.ForUpdate, dialects.ForShare, dialects.NoWait, dialects.SkipLocked} {
			delete(t.refusal, f)
			t.keyword[f] = ""
		}
	}
	return t
}

// require returns nil when the database can do f, and otherwise an error
// naming the part of l that asked for it.
func (t *target) require(f dialects.Feature, l lock, stmt *gorm.Statement) error {
	if ue := t.refusal[f]; ue != nil {
		e := *ue
		e.Feature = l.phrase(f, stmt)
		if t.d.Kind == dialects.SQLite && (f == dialects.ForUpdate || f == dialects.ForShare) {
			e.Reason = "SQLite has no row locks; lockplugin.New(lockplugin.SQLiteWriterLock()) makes such reads take the database's writer lock instead"
		}
		return &e
	}
	if _, ok := t.keyword[f]; !ok {
		// Not a lock feature at all: a zero lock, never made by this
		// package's constructors.
		return fmt.Errorf("%w: unknown lock strength %q", ErrInvalidLock, f)
	}
	return nil
}

// sendsOf reports whether the database writes OF for a lock that has it;
// where OF is refused, a lock that passed check named only the query's one
// table and is sent without OF.
func (t *target) sendsOf() bool { return t.refusal[dialects.LockOf] == nil && !t.writerLock }

// check returns why the database cannot run l on stmt, or nil. It runs
// before any SQL is built and again when the clause is rendered, so that a
// lock reaching the builder by any route is validated.
func (t *target) check(stmt *gorm.Statement, l lock) error {
	if l.err != nil {
		return l.err
	}
	if l.noWait && l.skipLocked {
		return fmt.Errorf("%w: NOWAIT and SKIP LOCKED cannot be combined: the first fails on a locked row, the second skips it", ErrInvalidLock)
	}
	if err := t.require(l.strength, l, stmt); err != nil {
		return err
	}
	if l.noWait {
		if err := t.require(dialects.NoWait, l, stmt); err != nil {
			return err
		}
	}
	if l.skipLocked {
		if err := t.require(dialects.SkipLocked, l, stmt); err != nil {
			return err
		}
	}
	if len(l.of) > 0 && !t.sendsOf() {
		// OF naming the query's only table locks exactly what the lock
		// without OF locks: accept it and send the lock without OF.
		// Anything else would lock more than asked, or is a typo the
		// database would have caught.
		if only, ok := onlyTable(stmt); !ok || !ofNamesOnly(l, only) {
			e := t.refusal[dialects.LockOf]
			if e == nil {
				e = &dialects.UnsupportedError{Dialect: t.d.String()}
			}
			c := *e
			c.Feature = l.phrase(dialects.LockOf, stmt)
			c.Reason = "OF is accepted here only when it names the query's one table, and is then sent without OF"
			if e.Reason != "" {
				c.Reason = e.Reason + "; " + c.Reason
			}
			return &c
		}
	}
	if err := t.checkWait(stmt, l); err != nil {
		return err
	}
	switch t.d.Kind {
	case dialects.SQLite:
		if t.writerLock && stmt != nil && stmt.DB.DryRun {
			// A subquery is built in DryRun too: a lock there would be
			// dropped without a trace, since the writer lock is taken by
			// running a statement, not by SQL in the query.
			return &dialects.UnsupportedError{
				Dialect: t.d.String(), Feature: l.describe(stmt) + " in DryRun, ToSQL or a subquery",
				Reason: "with SQLiteWriterLock the lock is the database's writer lock, taken by a statement sent before the query, so it cannot be part of SQL that is only rendered; lock in the outer query",
			}
		}
	case dialects.SQLServer:
		if l.strength == dialects.ForShare && l.skipLocked {
			return &dialects.UnsupportedError{
				Dialect: t.d.String(), Feature: "FOR SHARE SKIP LOCKED",
				Reason: "lockplugin does not combine READPAST with the REPEATABLEREAD hint that FOR SHARE takes there: it is not run against a live server; use ForUpdate(SkipLocked)",
			}
		}
	case dialects.Oracle:
		if what := aggregated(stmt); what != "" {
			return &dialects.UnsupportedError{
				Dialect: t.d.String(), Feature: l.describe(stmt) + " on a query with " + what,
				Reason: "ORA-01786: Oracle locks rows of a table, and DISTINCT, GROUP BY and aggregate functions (Count included) make rows that are not; lock the rows with a plain query first, then aggregate without a lock in the same transaction",
			}
		}
		if hasRowLimit(stmt) {
			return &dialects.UnsupportedError{
				Dialect: t.d.String(), Feature: l.describe(stmt) + " with a row limit (First, Take, Last, Limit, Offset)",
				Reason: "ORA-02014: Oracle cannot lock the rows of a FETCH FIRST/OFFSET query; select the keys first and lock them with WHERE id IN (...), or use Find without a limit",
			}
		}
	}
	return nil
}

// onlyTable returns the name by which the query's one table is known (its
// alias, or its name), and false when the query reads more than one table
// or a table expression that is not one table.
func onlyTable(stmt *gorm.Statement) (string, bool) {
	if stmt == nil || len(stmt.Joins) > 0 {
		return "", false
	}
	if fc, ok := stmt.Clauses["FROM"]; ok {
		if from, ok := fc.Expression.(clause.From); ok {
			if len(from.Joins) > 0 || len(from.Tables) > 1 {
				return "", false
			}
			if len(from.Tables) == 1 && from.Tables[0].Name != clause.CurrentTable {
				tb := from.Tables[0]
				if tb.Raw && !oneTable.MatchString(strings.TrimSpace(tb.Name+" "+tb.Alias)) {
					return "", false
				}
				if tb.Alias != "" {
					return tb.Alias, true
				}
				return tb.Name, true
			}
		}
	}
	if te := stmt.TableExpr; te != nil && (len(te.Vars) > 0 || !oneTable.MatchString(te.SQL)) {
		return "", false
	}
	return stmt.Table, stmt.Table != ""
}

// ofNamesOnly reports whether every name in l's OF is the query's one
// table.
func ofNamesOnly(l lock, only string) bool {
	for _, name := range l.of {
		if name != clause.CurrentTable && name != only {
			return false
		}
	}
	return true
}

// hasRowLimit reports whether the statement carries a LIMIT or OFFSET.
func hasRowLimit(stmt *gorm.Statement) bool {
	lim, ok := stmt.Clauses["LIMIT"].Expression.(clause.Limit)
	return ok && ((lim.Limit != nil && *lim.Limit >= 0) || lim.Offset > 0)
}

// sqlServerHint returns the table hint for l, e.g.
// " WITH (XLOCK, ROWLOCK, READPAST)".
func (t *target) sqlServerHint(l lock) string {
	h := " WITH (" + t.keyword[l.strength]
	if l.noWait {
		h += ", " + t.keyword[dialects.NoWait]
	}
	if l.skipLocked {
		h += ", " + t.keyword[dialects.SkipLocked]
	}
	return h + ")"
}
