package lockplugin

import (
	"time"

	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/internal/clauses"
)

// LockOption changes how a row lock behaves. The options are NoWait,
// SkipLocked, Of and WaitAtMost; only they make one (the interface has an
// unexported method), and any number may be given to ForUpdate, ForShare,
// ForNoKeyUpdate and ForKeyShare. Combinations no database can run
// (NoWait with SkipLocked, WaitAtMost with either) make the query fail
// with ErrInvalidLock before any SQL.
type LockOption = clauses.LockOption

// WaitPolicy says what a lock does when a row is already locked by someone
// else: NoWait or SkipLocked (both are LockOptions). Without one, the query
// waits (bounded by WaitAtMost, if given). Its String method returns the
// SQL name ("NOWAIT", "SKIP LOCKED").
type WaitPolicy = clauses.WaitPolicy

const (
	// NoWait fails at once with ErrLockNotAvailable instead of waiting for
	// a locked row (NOWAIT; the NOWAIT table hint on SQL Server).
	NoWait = clauses.NoWait
	// SkipLocked leaves out rows that others have locked (SKIP LOCKED; the
	// READPAST table hint on SQL Server): the work-queue claim.
	SkipLocked = clauses.SkipLocked
)

// ForUpdate locks the selected rows until the transaction ends: others
// wait to update them or to lock them themselves. Use it in a transaction:
//
//	db.Transaction(func(tx *gorm.DB) error {
//		if err := tx.Clauses(lockplugin.ForUpdate()).First(&acct, id).Error; err != nil {
//			return err
//		}
//		acct.Balance -= amount
//		return tx.Save(&acct).Error
//	})
//
// It renders as FOR UPDATE, or as WITH (XLOCK, ROWLOCK) after each table
// on SQL Server (an exclusive lock: UPDLOCK's update lock would let a
// ForShare reader in beside it); SQLite refuses it with ErrUnsupported
// unless the plugin was registered with SQLiteWriterLock.
func ForUpdate(opts ...LockOption) clause.Expression { return clauses.ForUpdate(opts...) }

// ForShare locks the selected rows against writers while letting other
// ForShare readers in (FOR SHARE, LOCK IN SHARE MODE on MariaDB and MySQL
// before 8.0.1, WITH (REPEATABLEREAD, ROWLOCK) on SQL Server: shared locks
// held to the end of the transaction, without HOLDLOCK's key-range locks).
// Oracle refuses it with ErrUnsupported, and so does SQLite without
// SQLiteWriterLock.
func ForShare(opts ...LockOption) clause.Expression { return clauses.ForShare(opts...) }

// ForNoKeyUpdate is PostgreSQL's FOR NO KEY UPDATE; elsewhere it fails with
// ErrUnsupported.
func ForNoKeyUpdate(opts ...LockOption) clause.Expression { return clauses.ForNoKeyUpdate(opts...) }

// ForKeyShare is PostgreSQL's FOR KEY SHARE; elsewhere it fails with
// ErrUnsupported.
func ForKeyShare(opts ...LockOption) clause.Expression { return clauses.ForKeyShare(opts...) }

// Of limits a lock to the named tables or aliases of a query with joins
// (FOR UPDATE OF on PostgreSQL and MySQL 8; hints on those tables only on
// SQL Server). Where OF is not supported (MariaDB, MySQL 5.7, Oracle), Of
// naming the query's one table locks what the lock without it locks and is
// sent without OF; any other Of there fails with ErrUnsupported.
func Of(tables ...string) LockOption { return clauses.Of(tables...) }

// WaitAtMost bounds how long a lock waits for a row someone else holds:
// after d the query fails with ErrLockNotAvailable.
//
//	tx.Clauses(lockplugin.ForUpdate(lockplugin.WaitAtMost(2*time.Second))).First(&acct, id)
//
// PostgreSQL: SET LOCAL lock_timeout before the query and the previous
// value set back after it (d rounded up to milliseconds; the timeout
// aborts the transaction, as every PostgreSQL error does, unless it ran
// under a savepoint such as a nested db.Transaction). SQL Server: SET
// LOCK_TIMEOUT before and the previous value after. MySQL: SET SESSION
// innodb_lock_wait_timeout and lock_wait_timeout before and the previous
// values after, in whole seconds rounded up. MariaDB 10.3+ and Oracle:
// FOR UPDATE WAIT n, n in whole seconds rounded up. SQLite refuses it with
// ErrUnsupported before any SQL; with NoWait or SkipLocked it is
// ErrInvalidLock. Where the bound is a setting (PostgreSQL, SQL Server,
// MySQL) it is refused in DryRun, ToSQL, subqueries, Row, Rows and Scan,
// and outside a transaction.
func WaitAtMost(d time.Duration) LockOption { return clauses.WaitAtMost(d) }

// NoLock removes any lock (lockplugin's or GORM's clause.Locking) from the
// query it is added to, so that a query built with a lock can be reused
// without one.
func NoLock() clause.Expression { return clauses.NoLock() }

// ErrNotInTransaction is returned for a locking read outside a
// transaction, where its locks would end with the statement. The plugin
// option AllowLocksOutsideTransaction turns the check off; DryRun is exempt.
var ErrNotInTransaction = clauses.ErrNotInTransaction

// ErrInvalidLock is returned for a lock no database could run as asked:
// NoWait with SkipLocked, a bad name in Of, a lock on Raw or Exec SQL.
var ErrInvalidLock = clauses.ErrInvalidLock
