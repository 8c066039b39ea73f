package clauses

import (
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/dialects"
)

// lockFeatures are the dialects features a lock can need.
var lockFeatures = [...]dialects.Feature{
	dialects.ForUpdate, dialects.ForShare, dialects.ForNoKeyUpdate, dialects.ForKeyShare,
	dialects.NoWait, dialects.SkipLocked, dialects.LockOf,
}

// target is what the lock builders need to know about one database,
// worked out once from dialects when the plugin is registered, so that
// building a query does not scan the capability matrix again.
type target struct {
	d dialects.Dialect
	// refusal holds the *dialects.UnsupportedError of each feature the
	// database cannot do.
	refusal map[dialects.Feature]error
	// keyword holds how the database phrases each feature it can do.
	keyword map[dialects.Feature]string
}

func newTarget(d dialects.Dialect) *target {
	t := &target{
		d:       d,
		refusal: make(map[dialects.Feature]error, len(lockFeatures)),
		keyword: make(map[dialects.Feature]string, len(lockFeatures)),
	}
	for _, f := range lockFeatures {
		if err := d.Require(f); err != nil {
			t.refusal[f] = err
		} else {
			t.keyword[f] = d.LockSQL(f)
		}
	}
	return t
}

// require returns nil when the database can do f.
func (t *target) require(f dialects.Feature) error {
	if err := t.refusal[f]; err != nil {
		return err
	}
	if _, ok := t.keyword[f]; !ok {
		// Not a lock feature at all: a zero lock, never made by this
		// package's constructors.
		return fmt.Errorf("%w: unknown lock strength %q", ErrInvalidLock, f)
	}
	return nil
}

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
	if err := t.require(l.strength); err != nil {
		return err
	}
	if l.noWait {
		if err := t.require(dialects.NoWait); err != nil {
			return err
		}
	}
	if l.skipLocked {
		if err := t.require(dialects.SkipLocked); err != nil {
			return err
		}
	}
	if len(l.of) > 0 {
		if err := t.require(dialects.LockOf); err != nil {
			return err
		}
	}
	switch t.d.Kind {
	case dialects.SQLServer:
		if l.strength == dialects.ForShare && l.skipLocked {
			return &dialects.UnsupportedError{
				Dialect: t.d.String(), Feature: "FOR SHARE SKIP LOCKED",
				Reason: "the READPAST hint cannot be combined with HOLDLOCK, which FOR SHARE needs",
			}
		}
	case dialects.Oracle:
		if hasRowLimit(stmt) {
			return &dialects.UnsupportedError{
				Dialect: t.d.String(), Feature: string(l.strength) + " with a row limit (First, Take, Last, Limit, Offset)",
				Reason: "ORA-02014: Oracle cannot lock the rows of a FETCH FIRST/OFFSET query; select the keys first and lock them with WHERE id IN (...), or use Find without a limit",
			}
		}
	}
	return nil
}

// hasRowLimit reports whether the statement carries a LIMIT or OFFSET.
func hasRowLimit(stmt *gorm.Statement) bool {
	lim, ok := stmt.Clauses["LIMIT"].Expression.(clause.Limit)
	return ok && ((lim.Limit != nil && *lim.Limit >= 0) || lim.Offset > 0)
}

// sqlServerHint returns the table hint for l, e.g.
// " WITH (UPDLOCK, ROWLOCK, READPAST)".
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
