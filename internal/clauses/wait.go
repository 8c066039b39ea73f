package clauses

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// waitAtMost is the option WaitAtMost returns.
type waitAtMost time.Duration

func (w waitAtMost) applyLock(l *lock) {
	d := time.Duration(w)
	switch {
	case d <= 0:
		l.fail(fmt.Errorf("%w: WaitAtMost(%v): the bound must be positive; use NoWait not to wait at all", ErrInvalidLock, d))
	case d > dialects.MaxLockWait:
		l.fail(fmt.Errorf("%w: WaitAtMost(%v) is longer than %v; leave the wait unbounded instead", ErrInvalidLock, d, dialects.MaxLockWait))
	default:
		l.wait = d
	}
}

// WaitAtMost bounds how long the lock waits for a row that someone else
// has locked: after d the query fails with ErrLockNotAvailable, and the
// transaction may go on (MySQL, MariaDB, Oracle, SQL Server) or must be rolled
// back (PostgreSQL, where every error aborts the transaction; a
// savepoint, e.g. a nested db.Transaction, keeps the rest).
//
//	tx.Clauses(clauses.ForUpdate(clauses.WaitAtMost(2*time.Second))).First(&acct, id)
//
// Per database:
//   - PostgreSQL: SET LOCAL lock_timeout (through set_config) before the
//     query, and the previous value set back after it, so that later
//     statements of the transaction wait as before. d is rounded up to
//     whole milliseconds. It bounds every lock wait of the query, table
//     locks included.
//   - SQL Server: SET LOCK_TIMEOUT before the query and the previous value
//     set back after it, in milliseconds.
//   - MySQL: SET SESSION innodb_lock_wait_timeout and lock_wait_timeout
//     before the query and the previous values set back after it, in whole
//     seconds rounded up. The SET_VAR optimizer hint is not used: which
//     variables it may set differs by server and version, and a hint the
//     server ignores drops the bound with no more than a warning.
//   - MariaDB 10.3+ and Oracle: FOR UPDATE WAIT n, n in whole seconds,
//     rounded up (WaitAtMost(300*time.Millisecond) waits up to 1 s).
//
// Elsewhere it fails with ErrUnsupported before any SQL is sent: SQLite,
// and MariaDB before 10.3. On PostgreSQL, SQL Server and MySQL the bound is set
// by statements around the query, so there it is refused in DryRun, ToSQL
// and subqueries, and with Row and Rows (whose rows are still open when
// the setting must be put back; Scan reads through Rows): use Find, First
// or Take. With NoWait or SkipLocked it fails with ErrInvalidLock:
// neither waits for a locked row.
func WaitAtMost(d time.Duration) LockOption { return waitAtMost(d) }

// waitPhrase names a bound the way the user wrote it, for messages.
func waitPhrase(d time.Duration) string { return "WaitAtMost(" + d.String() + ")" }

// checkWait returns why the database cannot bound l's wait on stmt, or
// nil. It runs as part of target.check.
func (t *target) checkWait(stmt *gorm.Statement, l lock) error {
	if l.wait <= 0 {
		return nil
	}
	if l.noWait || l.skipLocked {
		return fmt.Errorf("%w: %s with %s: NOWAIT and SKIP LOCKED never wait for a locked row, so there is no wait to bound", ErrInvalidLock, waitPhrase(l.wait), map[bool]string{true: "NoWait", false: "SkipLocked"}[l.noWait])
	}
	if err := t.require(dialects.LockWait, l, stmt); err != nil {
		return err
	}
	if t.waitStyle == sqldriver.WaitSetting && stmt != nil && stmt.DB != nil && stmt.DB.DryRun {
		return &dialects.UnsupportedError{
			Dialect: t.d.String(), Feature: l.describe(stmt) + " in DryRun, ToSQL or a subquery",
			Reason: "on " + t.d.String() + " the bound is a setting changed by a statement sent before the query and restored after it, so it cannot be part of SQL that is only rendered; bound the wait in the outer query",
		}
	}
	return nil
}

// rowsOpen refuses a setting-style wait on Row and Rows: the query's rows
// are still open when the setting would have to be restored, and the
// connection cannot run the restore until the caller closes them.
func (t *target) rowsOpen(stmt *gorm.Statement, l lock) error {
	if l.wait <= 0 || t.waitStyle != sqldriver.WaitSetting {
		return nil
	}
	return &dialects.UnsupportedError{
		Dialect: t.d.String(), Feature: l.describe(stmt) + " with Row or Rows",
		Reason: "the previous lock timeout is restored by a statement sent after the query, which cannot run while the query's rows are open; use Find, First or Take",
	}
}

// waitRestoreKey holds, in a statement's Settings, the function that puts
// back the setting a setting-style wait changed.
const waitRestoreKey = "lockplugin:wait_restore"

// setWait sends the statements that bound the coming query's lock wait on
// a WaitSetting database (the driver's WaitSetter says which), and stores
// how to undo them: the previous values, read before the change, are put
// back after the query.
func (t *target) setWait(stmt *gorm.Statement, l lock) error {
	if l.wait <= 0 || t.waitStyle != sqldriver.WaitSetting {
		return nil
	}
	pool := stmt.ConnPool
	if !plugin.InTransaction(pool) {
		// Outside a transaction (AllowLocksOutsideTransaction) the
		// setting and the query could run on different pooled connections,
		// and SET LOCAL would not even last until the query.
		return &dialects.UnsupportedError{
			Dialect: t.d.String(), Feature: l.describe(stmt) + " outside a transaction",
			Reason: "the bound is a setting that must be changed on the connection that runs the query, and only a transaction pins one; run it inside db.Transaction",
		}
	}
	ws := t.rl.WaitSetter()
	if ws == nil {
		// The driver says the wait is a setting but has no statements
		// for it: refuse rather than run the query unbounded.
		return &dialects.UnsupportedError{
			Dialect: t.d.String(), Feature: l.describe(stmt),
			Reason: "lockplugin has no statement that bounds a lock wait on this database",
		}
	}
	ctx := stmt.Context
	where := func(doing, when string, b sqldriver.WaitBound) string {
		return "lockplugin: " + doing + " " + when + " " + l.describe(stmt) + " on " + b.On
	}
	b := ws.Bound(l.wait)
	vals := make([]string, b.Columns)
	dest := make([]any, b.Columns)
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := pool.QueryRowContext(ctx, b.Read.SQL, b.Read.Args...).Scan(dest...); err != nil {
		return fmt.Errorf("%s: %w", where(b.ReadDoing, "for", b), err)
	}
	// The restore statement is made before the query, from the values
	// read: a value it could not put back fails the query before it runs.
	r, err := ws.Restore(vals[:b.Prev])
	if err != nil {
		return fmt.Errorf("%s: %w", where(b.ReadDoing, "for", b), err)
	}
	if b.Set.SQL != "" {
		if _, err := pool.ExecContext(ctx, b.Set.SQL, b.Set.Args...); err != nil {
			return fmt.Errorf("%s: %w", where(b.SetDoing, "for", b), err)
		}
	}
	stmt.Settings.Store(waitRestoreKey, func(failed bool) error {
		// The restore must run even when the query's context ended (a
		// deadline that fired during the wait): it gets a context of its
		// own, bounded so that a dead connection cannot hang the caller.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
		defer cancel()
		var err error
		if r.Query {
			var got string
			err = pool.QueryRowContext(ctx, r.SQL, r.Args...).Scan(&got)
		} else {
			_, err = pool.ExecContext(ctx, r.SQL, r.Args...)
		}
		if err != nil {
			if failed && r.RolledBack {
				// The rollback that must follow the failed query puts
				// the value back.
				return nil
			}
			return fmt.Errorf("%s%s: %w", where(r.Doing, "after", b), r.Consequence, err)
		}
		return nil
	})
	return nil
}

// restoreTimeout bounds the statement that puts a lock timeout back.
const restoreTimeout = 5 * time.Second

// restoreWait runs after the query: it puts back the setting setWait
// changed. A failed restore fails the query, since later statements of
// the transaction would otherwise run with the bound.
func restoreWait(db *gorm.DB) {
	v, ok := db.Statement.Settings.LoadAndDelete(waitRestoreKey)
	if !ok {
		return
	}
	restore, ok := v.(func(bool) error)
	if !ok {
		return
	}
	if err := restore(db.Error != nil); err != nil {
		_ = db.AddError(err)
	}
}
