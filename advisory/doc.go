// Package advisory provides named locks that the database stores and
// arbitrates: a mutex attached to no row, for "at most one of these runs at a
// time" across processes and servers (a cron entry deployed on three hosts, a
// queue dispatcher, a migration guard).
//
//	err := advisory.With(ctx, db, "nightly-invoice-run", func(conn *gorm.DB) error {
//		return runInvoices(conn)
//	}, advisory.Timeout(0))
//	if errors.Is(err, advisory.ErrTimeout) {
//		return nil // another process is running it: an ordinary answer
//	}
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
//     taken from the SHA-256 of the name (see PostgresKey). A wait is bounded
//     by lock_timeout, set for the one statement that waits.
//   - MySQL and MariaDB: GET_LOCK / RELEASE_LOCK. Waits are whole seconds
//     (a sub-second timeout rounds up); "wait indefinitely" is a year.
//   - SQL Server: sp_getapplock / sp_releaseapplock with @LockOwner =
//     'Session' and @LockMode = 'Exclusive'.
//   - Oracle: DBMS_LOCK.ALLOCATE_UNIQUE and DBMS_LOCK.REQUEST with
//     release_on_commit => FALSE; the user needs GRANT EXECUTE ON
//     SYS.DBMS_LOCK.
//   - SQLite: ErrUnsupported, and fn is not run.
//
// Names reach the database as they are (PostgreSQL excepted, which takes a
// number): a name the server finds too long comes back as the server's own
// error, never truncated into someone else's lock. SQL Server (255
// characters) and Oracle (128 bytes) would truncate silently, so there
// longer names are refused before anything is sent.
//
// Locks are not re-entrant. Taking a name again inside fn (detected through
// the context, or through passing fn's conn as the db) returns ErrReentrant at
// once instead of deadlocking against the caller's own session.
//
// WithTx takes a transaction-scoped lock instead, released by COMMIT or
// ROLLBACK, for connection poolers in transaction mode (PgBouncer) where a
// session lock would outlive the client's transaction on a shared server
// connection.
package advisory
