// Package advisory provides named locks that the database stores and
// arbitrates: a mutex attached to no row, for "at most one of these runs at a
// time" across processes and servers (a cron entry deployed on three hosts, a
// queue dispatcher, a migration guard).
//
//	// fragment: needs ctx context.Context, db *gorm.DB
//	err := advisory.With(ctx, db, "nightly-invoices", func(conn *gorm.DB) error {
//		return runNightlyInvoices(conn) // conn is the connection that holds the lock
//	}, advisory.WaitAtMost(0)) // try once
//	if errors.Is(err, advisory.ErrTimeout) {
//		return nil // another process is running it: an ordinary answer
//	}
//	return err
//
// A lock belongs to a database session, not to a transaction. With pins one
// connection from the write pool (the source, when gorm.io/plugin/dbresolver
// is registered), takes the lock on it, runs fn with a *gorm.DB over that
// very connection, and releases the lock on every way out of fn: a returned
// error, a panic (which propagates after the release), or success. A COMMIT
// inside fn does not release the lock; closing the connection does, which is
// why a connection whose release failed is discarded instead of going back
// to the pool.
//
// Per database:
//
//   - PostgreSQL: pg_advisory_lock / pg_try_advisory_lock on a 63-bit key
//     taken from the SHA-256 of the name (see PostgresKey, which also shows
//     how to find a lock in pg_locks). A wait is bounded by lock_timeout,
//     set for the one statement that waits (a local setting that ends with
//     that statement's implicit transaction, even on error); an indefinite
//     wait overrides a lock_timeout configured on the server, database or
//     role.
//   - MySQL and MariaDB: GET_LOCK / RELEASE_LOCK. Waits are whole seconds
//     (a sub-second timeout rounds up, never down: 300 ms waits 1 s);
//     "wait indefinitely" is a year. IS_USED_LOCK(name) shows the holder's
//     connection id.
//   - SQL Server: sp_getapplock / sp_releaseapplock with @LockOwner =
//     'Session' and @LockMode = 'Exclusive'. Return codes are mapped: 0 and 1
//     granted, -1 ErrTimeout, -2 cancelled, -3 deadlock victim, -999 call
//     error. APPLOCK_TEST('public', name, 'Exclusive', 'Session') tells
//     whether a lock is free.
//   - Oracle: DBMS_LOCK.ALLOCATE_UNIQUE and DBMS_LOCK.REQUEST with
//     release_on_commit => FALSE; the user needs GRANT EXECUTE ON
//     SYS.DBMS_LOCK. ALLOCATE_UNIQUE commits, which is harmless on the
//     freshly pinned connection; release uses the handle and does not
//     commit. Oracle is covered by exact-SQL tests only: no GORM Oracle
//     dialector is available to the project's CI.
//   - SQLite: ErrUnsupported, and fn is not run.
//
// A wait that fails is not taken at its word. PostgreSQL can raise 55P03
// (lock_timeout) for a wait that a release granted at that very moment, and
// a session lock survives the statement's error; a GET_LOCK interrupted by
// KILL QUERY can have been granted too. After any failed acquisition
// statement the session's holds of the name are read back and released on
// the same connection (pg_locks for pg_backend_pid(), RELEASE_LOCK until it
// answers other than 1, APPLOCK_MODE), and the connection goes back to the
// pool only when the database confirms it holds nothing; otherwise it is
// closed. So on ErrTimeout, or any other error, no session of the pool
// holds the lock, and a wait retried after a role's lock_timeout never
// stacks a second hold that one Release would leave behind.
//
// Cancelling a MySQL or MariaDB wait ends the server's waiting thread with
// KILL QUERY, sent on a connection opened for it from the DSN GORM's
// dialector was given, so it does not queue behind an exhausted pool
// (a pool handed to GORM ready-made, or a dbresolver source, falls back to
// the pool, for at most 2 s).
//
// Names reach the database as they are (PostgreSQL excepted, which takes a
// number): a name the server finds too long comes back as the server's own
// error, never truncated into someone else's lock. SQL Server (255
// characters) and Oracle (128 bytes) would truncate silently, and MySQL and
// MariaDB end a name at its first NUL byte, so there such names are refused
// before anything is sent. Error messages quote at most the first 64 bytes
// of a name.
//
// Locks are not re-entrant. Taking a name again inside fn (detected through
// the context, or through passing fn's conn as the db) returns ErrReentrant at
// once instead of deadlocking against the caller's own session.
//
// WithTx takes a transaction-scoped lock instead, released by COMMIT or
// ROLLBACK, for connection poolers in transaction mode (PgBouncer) where a
// session lock would outlive the client's transaction on a shared server
// connection. It exists on PostgreSQL (pg_advisory_xact_lock, or
// pg_try_advisory_xact_lock to try once) and SQL Server (@LockOwner =
// 'Transaction'); elsewhere it is ErrUnsupported. On PostgreSQL a bounded
// wait that runs out is a statement error and aborts the transaction (trying
// once does not), and the transaction's own lock_timeout is restored after a
// successful wait. Within one transaction the lock is re-entrant.
package advisory
