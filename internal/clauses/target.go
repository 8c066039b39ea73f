package clauses

import (
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
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
	// dr phrases the database's statements, and rl its row locks.
	dr sqldriver.Driver
	rl sqldriver.RowLock
	// hints: the lock is table hints in FROM (rl.HintsInFrom).
	hints bool
	// waitStyle is how the database bounds a lock's wait.
	waitStyle sqldriver.WaitStyle
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
	dr := drivers.For(d)
	rl := dr.RowLock()
	if rl == nil {
		// A database lockplugin does not know: the matrix refuses every
		// lock feature, and nothing is ever phrased.
		rl = sqldriver.RowLockDefaults{}
	}
	t := &target{
		d:         d,
		dr:        dr,
		rl:        rl,
		hints:     rl.HintsInFrom(),
		waitStyle: dr.LockWaitStyle(),
		refusal:   make(map[dialects.Feature]*dialects.UnsupportedError, len(lockFeatures)),
		keyword:   make(map[dialects.Feature]string, len(lockFeatures)),
	}
	for _, f := range lockFeatures {
		if err := d.Require(f); err != nil {
			var ue *dialects.UnsupportedError
			if !errors.As(err, &ue) {
				ue = &dialects.UnsupportedError{Dialect: d.String(), Feature: string(f), Reason: err.Error()}
			}
			t.refusal[f] = ue
		} else {
			t.keyword[f] = dr.LockClauseSQL(f)
		}
	}
	if cfg.SQLiteWriterLock && d.Supports(dialects.WriterLock) && rl.WriterLock() != nil {
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
		if reason := t.rl.StrengthRefusal(f); reason != "" {
			e.Reason = reason
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
	if t.writerLock && stmt != nil && stmt.DB.DryRun {
		// A subquery is built in DryRun too: a lock there would be
		// dropped without a trace, since the writer lock is taken by
		// running a statement, not by SQL in the query.
		return &dialects.UnsupportedError{
			Dialect: t.d.String(), Feature: l.describe(stmt) + " in DryRun, ToSQL or a subquery",
			Reason: "with SQLiteWriterLock the lock is the database's writer lock, taken by a statement sent before the query, so it cannot be part of SQL that is only rendered; lock in the outer query",
		}
	}
	if feature, reason := t.rl.Refusal(lockedQuery{l: l, stmt: stmt}); reason != "" {
		return &dialects.UnsupportedError{Dialect: t.d.String(), Feature: feature, Reason: reason}
	}
	return nil
}

// lockedQuery is what the database's RowLock.Refusal may ask about l on
// stmt.
type lockedQuery struct {
	l    lock
	stmt *gorm.Statement
}

func (q lockedQuery) Strength() dialects.Feature { return q.l.strength }
func (q lockedQuery) SkipLocked() bool           { return q.l.skipLocked }
func (q lockedQuery) Describe() string           { return q.l.describe(q.stmt) }
func (q lockedQuery) Aggregated() string         { return aggregated(q.stmt) }
func (q lockedQuery) RowLimited() bool           { return q.stmt != nil && hasRowLimit(q.stmt) }

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

// tableHint returns the table hint for l, e.g.
// " WITH (XLOCK, ROWLOCK, READPAST)" on SQL Server.
func (t *target) tableHint(l lock) string {
	kw := []string{t.keyword[l.strength]}
	if l.noWait {
		kw = append(kw, t.keyword[dialects.NoWait])
	}
	if l.skipLocked {
		kw = append(kw, t.keyword[dialects.SkipLocked])
	}
	return t.rl.TableHint(kw)
}
