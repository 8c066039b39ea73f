package advisory

import (
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// The package's statements are pure functions of the database, the name and
// the wait, built by the database's advisory family
// (internal/drivers/<database>/advisory.go, drivers.For(d).Advisory()), so
// that a golden file pins the exact SQL of each database without a server.
// This file turns them into the executor's statements.

// statement is one SQL text with its bind values. An outParam in args marks
// an output parameter that the executor binds to a destination.
type statement struct {
	sql  string
	args []any
	// held, when set, is a constant query that gives the answer "held"
	// (TiDB, see internal/drivers/tidb/advisory.go): when guard, a locking
	// read of guardArg sent first between guardBegin and guardEnd, finds
	// the row locked (and then sql is not sent), or when sql gives up with
	// TiDB's 1105.
	guard, held          string
	guardBegin, guardEnd string
	guardArg             any
}

// outParam marks an Oracle OUT bind in a statement's args.
type outParam = sqldriver.AdvisoryOut

// stmt is the executor's statement for the family's st.
func stmt(st sqldriver.AdvisoryStatement) statement {
	return statement{sql: st.SQL, args: st.Args, guard: st.Guard, held: st.Held,
		guardBegin: st.GuardBegin, guardEnd: st.GuardEnd, guardArg: st.GuardArg}
}

// session is what one session-scoped lock sends: steps are tried in order
// until one answers (MySQL asks once without waiting and learns its
// connection id, and only then waits; PostgreSQL waits again with
// lock_timeout off if a configured one ran out), release ends the lock.
// Oracle's release takes the lock handle that acquisition returns, so it is
// built later by the family's ReleaseHandle.
type session struct {
	steps   []sqldriver.AdvisoryStatement // the family's, turned into statements one at a time (stmt)
	release statement
}

// sd is w as the families take it.
func (w wait) sd() sqldriver.AdvisoryWait { return sqldriver.AdvisoryWait{Forever: w.forever, D: w.d} }

// family is d's advisory family, nil where d has no advisory locks (the
// capability gate refuses them first).
func family(d dialects.Dialect) sqldriver.Advisory { return drivers.For(d).Advisory() }

// checkName refuses the empty name and names a database would silently
// alter: truncate (SQL Server, Oracle) or cut at a NUL byte (MySQL and
// MariaDB, where "job\x00A" and "job\x00B" would be one lock). Other names
// reach the database as they are, and it answers for itself.
func checkName(d dialects.Dialect, name string) error {
	if name == "" {
		return errEmptyName
	}
	if f := family(d); f != nil {
		return f.CheckName(name)
	}
	return nil
}

// sessionPlan returns the statements of a session-scoped lock.
func sessionPlan(d dialects.Dialect, name string, w wait) (session, error) {
	f := family(d)
	if f == nil {
		return session{}, d.Require(dialects.AdvisoryLock)
	}
	s := f.Session(name, w.sd())
	return session{steps: s.Steps, release: stmt(s.Release)}, nil
}

// xactPlan returns the statement of a transaction-scoped lock.
func xactPlan(d dialects.Dialect, name string, w wait) (statement, error) {
	if f := family(d); f != nil {
		if st, ok := f.Xact(name, w.sd()); ok {
			return stmt(st), nil
		}
	}
	return statement{}, d.Require(dialects.AdvisoryXactLock)
}
