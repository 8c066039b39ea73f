package clauses

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/plugin"
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
	if t.d.LockWaitStyle() == dialects.WaitSetting && stmt != nil && stmt.DB != nil && stmt.DB.DryRun {
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
	if l.wait <= 0 || t.d.LockWaitStyle() != dialects.WaitSetting {
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

// setWait sends the statement that bounds the coming query's lock wait on
// a WaitSetting database, and stores how to undo it. The previous value is
// read in the same round trip, so nothing else runs between the read and
// the change.
func (t *target) setWait(stmt *gorm.Statement, l lock) error {
	if l.wait <= 0 || t.d.LockWaitStyle() != dialects.WaitSetting {
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
	ctx := stmt.Context
	// The restore must run even when the query's context ended (a
	// deadline that fired during the wait): it gets a context of its own,
	// bounded so that a dead connection cannot hang the caller.
	restoreCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
	}
	switch t.d.Kind {
	case dialects.Postgres:
		// set_config(..., true) is SET LOCAL: it ends with the transaction
		// (or the savepoint) in any case. OFFSET 0 keeps the subquery a
		// plan node of its own, so its row (the value before the change)
		// is produced before the outer select list calls set_config.
		var prev, now string
		want := strconv.FormatInt(dialects.WaitMillis(l.wait), 10) + "ms"
		if err := pool.QueryRowContext(ctx, pgSetLockTimeout, want).Scan(&prev, &now); err != nil {
			return fmt.Errorf("lockplugin: setting lock_timeout for %s on PostgreSQL: %w", l.describe(stmt), err)
		}
		stmt.Settings.Store(waitRestoreKey, func(failed bool) error {
			ctx, cancel := restoreCtx()
			defer cancel()
			var got string
			if err := pool.QueryRowContext(ctx, pgRestoreLockTimeout, prev).Scan(&got); err != nil {
				if failed {
					// The query's error aborted the transaction (or the
					// savepoint the caller rolls back to); the rollback
					// restores the value, and nothing runs before it.
					return nil
				}
				return fmt.Errorf("lockplugin: restoring lock_timeout to %q after %s on PostgreSQL: %w", prev, l.describe(stmt), err)
			}
			return nil
		})
	case dialects.MySQL:
		// Both timeouts: innodb_lock_wait_timeout bounds the wait for an
		// InnoDB row lock, lock_wait_timeout the wait for the table's
		// metadata lock (an ALTER TABLE in progress), which MariaDB's WAIT
		// n bounds too. They belong to the session, so they are put back
		// whatever the query's outcome. Two statements: the MySQL driver
		// sends one per round trip unless multiStatements is set.
		var prevRow, prevMeta int64
		if err := pool.QueryRowContext(ctx, myReadLockTimeouts).Scan(&prevRow, &prevMeta); err != nil {
			return fmt.Errorf("lockplugin: reading innodb_lock_wait_timeout for %s on %s: %w", l.describe(stmt), t.d, err)
		}
		secs := dialects.WaitSeconds(l.wait)
		if _, err := pool.ExecContext(ctx, fmt.Sprintf(mySetLockTimeouts, secs, secs)); err != nil {
			return fmt.Errorf("lockplugin: setting innodb_lock_wait_timeout for %s on %s: %w", l.describe(stmt), t.d, err)
		}
		stmt.Settings.Store(waitRestoreKey, func(bool) error {
			ctx, cancel := restoreCtx()
			defer cancel()
			if _, err := pool.ExecContext(ctx, fmt.Sprintf(mySetLockTimeouts, prevRow, prevMeta)); err != nil {
				return fmt.Errorf("lockplugin: restoring innodb_lock_wait_timeout to %d and lock_wait_timeout to %d after %s on %s (the connection keeps the bound): %w", prevRow, prevMeta, l.describe(stmt), t.d, err)
			}
			return nil
		})
	case dialects.SQLServer:
		// LOCK_TIMEOUT belongs to the session, not the transaction: it must
		// be put back whatever the query's outcome. The value is an
		// integer lockplugin formats itself, never user text.
		var prev int64
		q := fmt.Sprintf(msSetLockTimeout, dialects.WaitMillis(l.wait))
		if err := pool.QueryRowContext(ctx, q).Scan(&prev); err != nil {
			return fmt.Errorf("lockplugin: setting LOCK_TIMEOUT for %s on SQL Server: %w", l.describe(stmt), err)
		}
		stmt.Settings.Store(waitRestoreKey, func(bool) error {
			ctx, cancel := restoreCtx()
			defer cancel()
			if _, err := pool.ExecContext(ctx, fmt.Sprintf(msRestoreLockTimeout, prev)); err != nil {
				return fmt.Errorf("lockplugin: restoring LOCK_TIMEOUT to %d after %s on SQL Server (the connection keeps the bound until it is reset): %w", prev, l.describe(stmt), err)
			}
			return nil
		})
	}
	return nil
}

// restoreTimeout bounds the statement that puts a lock timeout back.
const restoreTimeout = 5 * time.Second

// The statements around a setting-style wait, exact SQL (tests compare it).
const (
	pgSetLockTimeout     = "SELECT prev.v, set_config('lock_timeout', $1, true) FROM (SELECT current_setting('lock_timeout') AS v OFFSET 0) AS prev"
	pgRestoreLockTimeout = "SELECT set_config('lock_timeout', $1, true)"
	msSetLockTimeout     = "DECLARE @lockplugin_prev int = @@LOCK_TIMEOUT; SET LOCK_TIMEOUT %d; SELECT @lockplugin_prev"
	msRestoreLockTimeout = "SET LOCK_TIMEOUT %d"
	myReadLockTimeouts   = "SELECT @@SESSION.innodb_lock_wait_timeout, @@SESSION.lock_wait_timeout"
	mySetLockTimeouts    = "SET SESSION innodb_lock_wait_timeout = %d, lock_wait_timeout = %d"
)

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
