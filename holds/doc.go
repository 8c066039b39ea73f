// Package holds grants capacity holds: at most N holders of a resource at
// once, even when many acquirers race for the last slot.
//
// A resource is any GORM model with a single-column primary key that says
// how many holders it admits:
//
//	// fragment
//	type Seat struct {
//		ID       uint
//		Capacity int
//	}
//
//	// HoldCapacity implements holds.Holdable.
//	func (s Seat) HoldCapacity() int { return s.Capacity }
//
// Acquire grants a hold while a slot is free. When the resource is full it
// returns a nil Hold and an error matching ErrFull, which also matches
// lockplugin.ErrBusy, the answer of every mechanism when someone else has
// what was asked for:
//
//	// fragment: needs ctx context.Context, db *gorm.DB, seat Seat
//	h, err := holds.Acquire(ctx, db, &seat, "customer-42", holds.TTL(15*time.Minute))
//	switch {
//	case errors.Is(err, holds.ErrFull):
//		return errSoldOut
//	case err != nil:
//		return err
//	}
//	// ... take the payment, then keep the seat or give it back:
//	return h.Release(ctx)
//
// The Hold remembers the *gorm.DB and holds table it came from, so its
// Release and Extend methods need neither; the package functions Release and
// Extend are for a Hold built by hand (from an ID kept in a session, say).
// Releasing a hold this handle already released is a no-op returning nil.
// A hold that stopped being the holder's before the call (it expired, or an
// operator ended it with ForceRelease) is reported by Release and Extend
// with ErrLost, never as a silent success. The zero Hold and a nil *Hold
// are refused with ErrInvalid. Options follow one rule: a nil Option is
// ignored, and an invalid value (a negative TTL, a bad Table name) is
// returned by the call as an error matching ErrInvalid, before anything is
// sent.
//
// # How a hold is granted
//
// Acquire runs one transaction that (1) locks the resource's own row, (2)
// counts the resource's active holds, (3) compares the count with
// HoldCapacity, and (4) inserts the hold or grants nothing. Every acquirer of
// one resource queues on that row, so the count each one sees is final until
// it commits. The hold rows are never locked: a locking read of the holds
// finds an empty set when the resource has none, which on PostgreSQL locks
// nothing at all, and on InnoDB it takes gap locks that make acquirers of
// unrelated resources wait for each other. Locking the resource row costs
// one row lock per resource, so acquirers of different resources never wait
// for each other (except on SQLite, which has one writer per database).
//
// The row lock is taken with raw SQL, with the model's scopes dropped: a
// soft-deleted resource still serialises its acquirers. The capacity is
// asked of the row as read under the lock (fields that the database does not
// store keep the values of the resource passed in), so a capacity change
// committed by someone else is honoured.
//
//   - PostgreSQL, MySQL and MariaDB: SELECT ... WHERE pk = ? FOR UPDATE.
//   - SQL Server: SELECT ... WITH (UPDLOCK, ROWLOCK) WHERE pk = ?.
//   - SQLite has no row locks. Acquire first writes the resource's key back
//     to itself (UPDATE res SET pk = pk WHERE pk = ?), which takes the
//     database's writer lock before anything is read, so a stale read
//     snapshot can never fail the transaction's upgrade with
//     SQLITE_BUSY_SNAPSHOT. For real concurrency open SQLite with WAL, a busy
//     timeout and immediate transactions, for example
//     "file:app.db?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_txlock=immediate"
//     (modernc.org/sqlite and github.com/glebarez/sqlite spelling).
//
// Oracle is not supported yet: Acquire returns an error matching
// dialects.ErrUnsupported before sending any SQL.
//
// A transaction that fails with an error dialects.IsRetryable recognises (a
// deadlock victim, a serialization failure, SQLite busy) is run again, up to
// three times, and each replay reads the count afresh under a fresh lock, so
// it may well grant nothing. After the third replay the error is returned.
//
// The count must see every hold committed before the resource row's lock
// was granted, whatever the isolation level. Acquire's own transaction
// locks before it reads anything, and runs at READ COMMITTED on PostgreSQL
// and SQL Server (where a REPEATABLE READ session default would otherwise
// fix the snapshot before the lock wait).
//
// When db is already a transaction, Acquire runs inside it under a
// savepoint, replays by rolling back to that savepoint, and never commits or
// rolls back the caller's work. The hold, and the lock on the resource row,
// then last until the caller's transaction ends. Note that MySQL and MariaDB
// roll back the whole transaction of a deadlock victim: the savepoint is gone
// with it, and Acquire returns the error for the caller to replay its own
// transaction. The caller's transaction may already have read something,
// and so fixed a snapshot older than the lock:
//
//   - PostgreSQL: Acquire runs only in a READ COMMITTED transaction (the
//     default). In a REPEATABLE READ or SERIALIZABLE one it returns an error
//     matching dialects.ErrUnsupported before writing anything: its
//     snapshot cannot see holds granted since, and SERIALIZABLE's conflict
//     detection does not cover Acquire's own READ COMMITTED transactions.
//   - MySQL and MariaDB: the count is a locking read (FOR SHARE, or LOCK IN
//     SHARE MODE), which always sees the latest committed holds, and so is
//     the read of the caller's own hold that the count found (a plain read
//     would not see it if it was committed after the snapshot). At
//     REPEATABLE READ (the default) it also takes gap locks until the
//     caller commits, which can make acquirers of neighbouring resources
//     wait; at READ COMMITTED it does not.
//   - SQL Server: a SNAPSHOT transaction is refused as on PostgreSQL.
//   - SQLite: with _txlock=immediate the caller's transaction holds the
//     writer lock from BEGIN; with deferred transactions a stale snapshot
//     fails with SQLITE_BUSY_SNAPSHOT ("database is locked").
//
// # Active holds and the database clock
//
// A hold is active while it is neither released nor expired. Expiry is
// judged by the database server's clock (the holds table stores times as
// epoch milliseconds from that clock), so application servers whose clocks
// disagree still agree on which holds count, and an expired hold frees its
// slot without any sweeper. TTL sets an expiry; without it a hold lasts
// until Release.
//
// A holder that already has an active hold on a resource gets that hold
// back from Acquire instead of a second slot. Extend takes the resource's
// row lock as Acquire does, so that no acquirer counts a hold as expired
// while its extension is still uncommitted; Release needs no lock, since it
// only ever frees a slot.
//
// # Holders, contexts, replicas
//
// Holders compare byte for byte on every database: "alice" and "alice "
// are two holders. MySQL and MariaDB collations pad (utf8mb4_bin included)
// and SQL Server's = ignores trailing spaces, so there the holder is
// compared cast to binary; Migrate gives new MySQL tables a VARBINARY holder
// column.
//
// Every call ends when its ctx or db's own context (db.WithContext) ends,
// whichever is first, and an ended one stops it before any SQL; a context
// that ends inside Acquire's transaction is returned as the context's error.
//
// Under gorm.io/plugin/dbresolver every statement of this package goes to a
// source, as dbresolver.Write would send it: Release, Extend, Available,
// IsFull and ActiveFor included, since a replica that lags answers for a
// past that no longer holds.
//
// The statements are fixed SQL with bind parameters, rendered once per
// database and table and sent straight to the connection pool (or the
// caller's transaction), past GORM's statement builder: they reach GORM's
// logger, but not GORM callbacks (a tracing plugin built on callbacks does
// not see them). A DryRun session is refused with ErrInvalid.
//
// # Reads
//
// Available, IsFull and ActiveFor take no locks and are true as of the
// instant they ran: by the time the caller acts on them, someone else may
// have taken the last slot. Acquire and handle ErrFull; never check first
// and then acquire. Available and IsFull read the capacity where Acquire
// does, from the resource's row as stored (HoldCapacity of the row, not of
// the value passed in), so they never disagree with Acquire about it.
//
// # Operators, observers
//
// ForceRelease ends a resource's holds (or one holder's) by an operator's
// decision; `lockcheck who -force-release table/id` calls it. The slots are
// free at once, and each stale holder's next Release or Extend returns
// ErrLost.
//
// With an Observer set on the plugin (lockplugin.WithObserver), Acquire
// reports HoldGranted or HoldFull, Release HoldReleased, ForceRelease
// HoldForceReleased, and every read of a resource's holds (Acquire's count,
// ActiveFor, Available, IsFull) reports HoldExpired for each hold it meets
// whose TTL has passed but that was never released. To report each such
// hold once, whichever process meets it first, the read marks it as ended
// at its expiry (released_at = expires_at) with one small UPDATE per hold;
// a later Release of it reports ErrLost as before. Without an Observer the
// reads send nothing more, and an expired hold simply stops counting.
//
// # The holds table
//
// Migrate creates the holds table (DefaultTable, or the name given with
// Table) and the index the count uses; several processes may run it at
// once. Released and expired holds stay in the table as history. They cost
// Acquire nothing: the count reads only the active holds through the index
// (resource, released_at, expires_at), with the database clock evaluated
// once per statement, so a resource with a million holds that expired
// unreleased acquires as fast as one with none. Purge deletes the holds that
// ended more than a given age ago, in small batches, never an active one;
// nothing purges by default (see Purge for the trade-off).
package holds
