package holds

import (
	"sync"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// savepointName is the savepoint Acquire sets inside a caller's transaction.
const savepointName = "lockplugin_holds"

// holdColumns are the holds table's columns in the order scanHold reads them.
const holdColumns = "id, resource_type, resource_id, holder, created_at, expires_at, released_at"

// statements renders the SQL of one holds table for one database: this
// package assembles every statement, and asks the database's Holds family
// (internal/drivers/<database>/holds.go) for the parts that differ by
// database. Every statement binds its values with ?, which bind turns into
// the driver's placeholder (compiled does, once per database and table);
// identifiers are quoted by the driver.
type statements struct {
	d     dialects.Dialect
	dr    sqldriver.Driver
	h     sqldriver.Holds // nil where holds do not run (the gate refused it)
	t     sqldriver.HoldsTable
	table string // unquoted holds table, as configured
	holds string // quoted holds table
	now   string // the database clock, epoch milliseconds
}

func newStatements(d dialects.Dialect, table string) statements {
	dr := drivers.For(d)
	holds := dr.QuoteTable(table)
	schema, bare := splitTable(table)
	return statements{
		d: d, dr: dr, h: dr.Holds(), table: table, holds: holds, now: dr.NowMillis(),
		t: sqldriver.HoldsTable{Name: table, Schema: schema, Bare: bare, Quoted: holds},
	}
}

// active is the condition for a hold that counts: not released and not
// expired by the database clock. It is for statements that find their hold
// by id; a statement over one resource's holds uses activeOf, which the
// index can narrow.
func (s statements) active() string {
	return "released_at IS NULL AND (expires_at IS NULL OR expires_at > " + s.now + ")"
}

// clock is the database clock as a value fixed once per statement, which an
// index range can compare against (the family says how: a subquery where
// the clock would otherwise be evaluated per row).
func (s statements) clock() string { return s.h.Clock() }

// arg is the placeholder of the n-th argument of a statement over one
// resource's holds: "?" (bind numbers them in order, so they must appear in
// argument order), or a numbered one where activeOf repeats the resource's
// arguments.
func (s statements) arg(n int) string { return s.h.Arg(n) }

// activeOf is the condition for the active holds of one resource, whose
// type and id are the placeholders rt and rid, written so that the index
// (resource_type, resource_id, released_at, expires_at) reads only the
// active holds: a hold that expired unreleased is skipped by the index
// range, not read and filtered. The cost of a count then stays flat however
// many such holds the resource has gathered.
func (s statements) activeOf(rt, rid string) string { return s.h.ActiveOf(s.t, rt, rid) }

// lockResource returns the statements that lock the resource's row and read
// it back: the lock is "" where the read itself locks. The resource table
// and key column are given unquoted.
func (s statements) lockResource(table, key string) (lock, read string) {
	return s.h.LockResource(s.dr.QuoteTable(table), s.dr.QuoteIdent(key))
}

// count reads the number of active holds of a resource, the id of the given
// holder's active hold if any, and the database clock. Arguments: holder,
// resource type, resource id.
//
// The count takes no lock, except with share where Acquire asks for one
// inside a caller's transaction (LatestRead: MySQL, MariaDB, TiDB): there a
// plain SELECT may read a REPEATABLE READ snapshot taken before the
// resource row was locked, and miss holds committed since; a locking read
// always sees the latest committed rows.
func (s statements) count(share bool) string {
	q := "SELECT COUNT(*), MIN(CASE WHEN " + s.holderIsArg(s.arg(1)) + " THEN id END), " + s.now +
		" FROM " + s.holds + " WHERE " + s.activeOf(s.arg(2), s.arg(3))
	if share {
		q += s.dr.LatestRead()
	}
	return q
}

// holderIs is the condition "holder equals the bound value", byte for
// byte, however the database compares strings.
func (s statements) holderIs() string { return s.holderIsArg("?") }

// holderIsArg is holderIs with the placeholder p.
func (s statements) holderIsArg(p string) string { return s.h.HolderIs(p) }

// isolation returns the query that reads the isolation level of the
// transaction it runs in, where a caller's transaction could read a
// snapshot older than the resource row's lock; "" where Acquire needs no
// check.
func (s statements) isolation() string { return s.h.Isolation() }

// snapshotIsolation reports whether an isolation level, as the isolation
// query answered it, reads one snapshot for the whole transaction. Such a
// transaction could count the holds as they were before the resource row
// was locked, so Acquire refuses to run in it.
func (s statements) snapshotIsolation(level string) bool { return s.h.SnapshotIsolation(level) }

// isolationName names an isolation level, as the isolation query answered
// it, in the error that refuses it.
func (s statements) isolationName(level string) string { return s.h.IsolationName(level) }

// ownReadCommitted reports whether Acquire's own transactions ask for READ
// COMMITTED (see call.run).
func (s statements) ownReadCommitted() bool { return s.h.OwnReadCommitted() }

// countActive counts a resource's active holds. Arguments: resource type,
// resource id.
func (s statements) countActive() string {
	return "SELECT COUNT(*) FROM " + s.holds + " WHERE " + s.activeOf(s.arg(1), s.arg(2))
}

// activeFor reads a holder's active hold. Arguments: resource type, resource
// id, holder.
func (s statements) activeFor() string {
	return "SELECT " + holdColumns + " FROM " + s.holds +
		" WHERE " + s.activeOf(s.arg(1), s.arg(2)) + " AND " + s.holderIsArg(s.arg(3)) + " ORDER BY id"
}

// byID reads one hold. Argument: id.
func (s statements) byID() string {
	return "SELECT " + holdColumns + " FROM " + s.holds + " WHERE id = ?"
}

// byIDLatest is byID for Acquire: inside a caller's transaction on MySQL
// and MariaDB a locking read, which sees the latest committed row where a
// plain read would see the caller's REPEATABLE READ snapshot, older than the
// hold the count has just found.
func (s statements) byIDLatest(callerTx bool) string {
	if callerTx {
		return s.latest(s.byID())
	}
	return s.byID()
}

// latest makes a read inside a caller's transaction see the latest
// committed rows: a locking read on MySQL and MariaDB, whose REPEATABLE
// READ snapshot may be older (FOR UPDATE on TiDB, which has no shared
// locks); as it is elsewhere (READ COMMITTED).
func (s statements) latest(q string) string {
	return q + s.dr.LatestRead()
}

// activeByID reads one hold if it is active. Argument: id.
func (s statements) activeByID() string {
	return "SELECT " + holdColumns + " FROM " + s.holds + " WHERE id = ? AND " + s.active()
}

// grant is the count-and-insert in one statement where the database has
// one (PostgreSQL), run once the resource row is locked: it inserts the
// hold when the holder has no active one and the active holds number fewer
// than the capacity, and returns the new row's id, created_at and
// expires_at; no row when it inserted nothing (full, or the holder's own
// hold exists: count tells which). Arguments, numbered by the family:
// resource type, resource id, holder, TTL in ms (NULL for none), capacity.
func (s statements) grant() string { return s.h.Grant(s.t) }

// oneStatementGrant reports whether Acquire counts and inserts with grant.
// Elsewhere it counts, then inserts (see the family's Grant for why).
func (s statements) oneStatementGrant() bool { return s.grant() != "" }

// insert adds a hold. Arguments: resource type, resource id, holder,
// created_at, expires_at.
func (s statements) insert() string {
	q, _ := s.h.Insert(s.t)
	return q
}

// insertAnswersRow reports whether insert answers the new id as a row
// rather than through LastInsertId.
func (s statements) insertAnswersRow() bool {
	_, row := s.h.Insert(s.t)
	return row
}

// releaseReturning is release answering the time it set, in the same
// statement, where the database can; "" elsewhere.
func (s statements) releaseReturning() string {
	return s.h.ReleaseReturning(s.t, "id = ? AND "+s.active())
}

// releasedAt reads a hold's state after Release changed nothing, or to
// learn the time it set: when it was released (NULL if it is not), when it
// expires (NULL for never) and the database clock. Argument: id.
func (s statements) releasedAt() string {
	return "SELECT released_at, expires_at, " + s.now + " FROM " + s.holds + " WHERE id = ?"
}

// release marks a hold released if it is active: a hold already released
// or expired is left as it is (Release reports it lost). Argument: id.
func (s statements) release() string {
	return "UPDATE " + s.holds + " SET released_at = " + s.now + " WHERE id = ? AND " + s.active()
}

// forceRelease lists the active holds of a resource, for ForceRelease to
// end one by one by id (release): an UPDATE over the resource's index range
// would lock the index before the rows, the opposite order of a Release by
// id, and InnoDB deadlocks the two. Arguments: resource type, resource id.
// forceReleaseHolder lists one holder's. Arguments: resource type, resource
// id, holder.
func (s statements) forceRelease() string {
	return "SELECT id FROM " + s.holds + " WHERE " + s.activeOf(s.arg(1), s.arg(2)) + " ORDER BY id"
}

func (s statements) forceReleaseHolder() string {
	return "SELECT id FROM " + s.holds + " WHERE " + s.activeOf(s.arg(1), s.arg(2)) + " AND " + s.holderIsArg(s.arg(3)) + " ORDER BY id"
}

// expiredUnmarked lists a resource's holds whose TTL has passed by the
// database clock but that were never released: id, created_at, expires_at.
// Arguments: resource type, resource id.
func (s statements) expiredUnmarked() string {
	return "SELECT id, created_at, expires_at FROM " + s.holds +
		" WHERE resource_type = ? AND resource_id = ? AND released_at IS NULL AND expires_at IS NOT NULL AND expires_at <= " + s.clock()
}

// markExpired records that an expired hold ended at its expiry
// (released_at = expires_at), once: the hold reported expired is the one
// this statement changed. Argument: id.
func (s statements) markExpired() string {
	return "UPDATE " + s.holds + " SET released_at = expires_at WHERE id = ? AND released_at IS NULL AND expires_at IS NOT NULL"
}

// extend moves an active hold's expiry to now + ttl. Arguments: ttl in
// milliseconds, id.
func (s statements) extend() string {
	return "UPDATE " + s.holds + " SET expires_at = " + s.now + " + ? WHERE id = ? AND " + s.active()
}

// extendForever removes an active hold's expiry. Argument: id.
func (s statements) extendForever() string {
	return "UPDATE " + s.holds + " SET expires_at = NULL WHERE id = ? AND " + s.active()
}

// savepoint, rollbackTo and releaseSavepoint bracket an Acquire inside a
// caller's transaction; releaseSavepoint is "" where savepoints end only
// with the transaction.
func (s statements) savepoint() string { return s.dr.Savepoint(savepointName) }

func (s statements) rollbackTo() string { return s.dr.RollbackTo(savepointName) }

func (s statements) releaseSavepoint() string { return s.dr.ReleaseSavepoint(savepointName) }

// createTable returns the DDL that creates the holds table and the index the
// count walks (resource, then the two columns that decide activity), each
// statement safe to run again; nil where holds do not run. The columns are
// the same everywhere; what differs is the key's type, how strings compare
// exactly, and whether the index is declared inline.
func (s statements) createTable() []string {
	if s.h == nil {
		return nil
	}
	return s.h.CreateTable(s.t)
}

// compiled is the SQL of one holds table on one database, rendered and
// bound once: the statements are fixed, so each call only looks them up.
type compiled struct {
	count, countShare, grant, insert  string
	byID, byIDLatest, activeByID      string
	activeFor, countActive            string
	release, releaseReturning, relAt  string
	relAtLatest, forceRelease         string
	forceReleaseHolder, markExpired   string
	expiredUnmarked                   string
	extend, extendForever, isolation  string
	savepoint, rollbackTo, releaseSav string
}

type compiledKey struct {
	d     dialects.Dialect
	table string
}

// compiledCache holds pure functions of their keys, so nothing in it can
// go stale or need resetting.
var compiledCache sync.Map // compiledKey -> *compiled

func (s statements) compiled() *compiled {
	k := compiledKey{s.d, s.table}
	if c, ok := compiledCache.Load(k); ok {
		return c.(*compiled)
	}
	b := func(q string) string { return bind(s.dr, q) }
	c := &compiled{
		count: b(s.count(false)), countShare: b(s.count(true)), insert: b(s.insert()),
		byID: b(s.byID()), byIDLatest: b(s.byIDLatest(true)), activeByID: b(s.activeByID()),
		activeFor: b(s.activeFor()), countActive: b(s.countActive()),
		release: b(s.release()), releaseReturning: b(s.releaseReturning()), relAt: b(s.releasedAt()),
		relAtLatest:  b(s.latest(s.releasedAt())),
		forceRelease: b(s.forceRelease()), forceReleaseHolder: b(s.forceReleaseHolder()),
		markExpired: b(s.markExpired()), expiredUnmarked: b(s.expiredUnmarked()),
		extend: b(s.extend()), extendForever: b(s.extendForever()), isolation: s.isolation(),
		savepoint: s.savepoint(), rollbackTo: s.rollbackTo(), releaseSav: s.releaseSavepoint(),
	}
	c.grant = s.grant() // numbered by the family: its arguments repeat
	compiledCache.Store(k, c)
	return c
}

type lockKey struct {
	d          dialects.Dialect
	table, key string
}

var lockCache sync.Map // lockKey -> [3]string

// lockStatements is lockResource, bound and kept like compiled.
func (s statements) lockStatements(table, key string) (lock, read string) {
	lr := s.resourceStatements(table, key)
	return lr[0], lr[1]
}

// readStatement reads the resource's row without a lock, for Available
// and IsFull. Argument: the primary key.
func (s statements) readStatement(table, key string) string {
	return s.resourceStatements(table, key)[2]
}

func (s statements) resourceStatements(table, key string) [3]string {
	k := lockKey{s.d, table, key}
	if v, ok := lockCache.Load(k); ok {
		return v.([3]string)
	}
	lock, read := s.lockResource(table, key)
	plain := "SELECT * FROM " + s.dr.QuoteTable(table) + " WHERE " + s.dr.QuoteIdent(key) + " = ?"
	lr := [3]string{bind(s.dr, lock), bind(s.dr, read), bind(s.dr, plain)}
	lockCache.Store(k, lr)
	return lr
}
