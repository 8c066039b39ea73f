package lockplugin

// SQLiteWriterLock lets ForUpdate and ForShare (and GORM's clause.Locking)
// run on SQLite, which has no row locks, by taking the database's writer
// lock instead: inside a transaction, a locking read first sends a write
// that changes nothing (DELETE FROM the query's table WHERE 0), which takes
// the lock SQLite gives one connection at a time. The read then sees the
// latest commit, and nobody else can write until the transaction ends: a
// stronger lock than asked for, never a weaker one.
//
//	db.Use(lockplugin.New(lockplugin.SQLiteWriterLock()))
//
// With it:
//   - SkipLocked skips nothing: no one else can hold a row while the
//     writer lock is held.
//   - NoWait sets the transaction's busy timeout to 0 while the lock is
//     taken, and fails at once with ErrLockNotAvailable when another
//     connection holds it (or when the transaction's read snapshot is
//     stale, SQLITE_BUSY_SNAPSHOT); the timeout is put back afterwards.
//   - ForNoKeyUpdate, ForKeyShare and Of naming anything but the query's
//     one table stay refused with ErrUnsupported, and so does a lock in
//     DryRun, ToSQL or a subquery, where no statement can take the lock.
//   - Transactions opened with _txlock=immediate already hold the writer
//     lock from BEGIN; the no-op write then costs one statement.
//
// Use WAL (_pragma=journal_mode(WAL)) and a busy timeout
// (_pragma=busy_timeout(5000)): while one transaction holds the writer
// lock, the others' locking reads wait for it, up to the busy timeout.
// Without this option every lock on SQLite fails with ErrUnsupported and
// nothing is sent.
func SQLiteWriterLock() Option {
	return func(c *config) { c.sqliteWriterLock = true }
}
