package holds

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/lockplugin/lockplugin/dialects"
)

// savepointName is the savepoint Acquire sets inside a caller's transaction.
const savepointName = "lockplugin_holds"

// holdColumns are the holds table's columns in the order scanHold reads them.
const holdColumns = "id, resource_type, resource_id, holder, created_at, expires_at, released_at"

// statements renders the SQL of one holds table for one database. Every
// statement binds its values with ?, which bind turns into the database's
// placeholder (compiled does, once per database and table); identifiers are
// quoted by the dialect.
type statements struct {
	d     dialects.Dialect
	table string // unquoted holds table, as configured
	holds string // quoted holds table
	now   string // the database clock, epoch milliseconds
}

func newStatements(d dialects.Dialect, table string) statements {
	return statements{d: d, table: table, holds: d.QuoteTable(table), now: d.NowMillisSQL()}
}

// active is the condition for a hold that counts: not released and not
// expired by the database clock. It is for statements that find their hold
// by id; a statement over one resource's holds uses activeOf, which the
// index can narrow.
func (s statements) active() string {
	return "released_at IS NULL AND (expires_at IS NULL OR expires_at > " + s.now + ")"
}

// clock is the database clock as a value fixed once per statement, which an
// index range can compare against: PostgreSQL's clock_timestamp() is
// volatile, so compared directly it is evaluated per row and the index
// narrows only released_at IS NULL, leaving every hold that expired without
// a Release to be read again by every later count. As an uncorrelated
// subquery it runs once (an InitPlan) and expires_at > it becomes an index
// condition. SQLite plans it the same way. MySQL, MariaDB and SQL Server
// fix UTC_TIMESTAMP(6) and SYSUTCDATETIME() per statement already and
// range-scan the plain expression.
func (s statements) clock() string {
	switch s.d.Kind {
	case dialects.Postgres, dialects.SQLite:
		return "(SELECT " + s.now + ")"
	}
	return s.now
}

// arg is the placeholder of the n-th argument of a statement: "?" (bind
// numbers them in order, so they must appear in argument order), and on
// SQLite "?n", since activeOf repeats the resource's arguments there.
func (s statements) arg(n int) string {
	if s.d.Kind == dialects.SQLite {
		return "?" + strconv.Itoa(n)
	}
	return "?"
}

// activeOf is the condition for the active holds of one resource, whose
// type and id are the placeholders rt and rid, written so that the index
// (resource_type, resource_id, released_at, expires_at) reads only the
// active holds: a hold that expired unreleased is skipped by the index
// range, not read and filtered. The cost of a count then stays flat however
// many such holds the resource has gathered. PostgreSQL ORs two index
// ranges (a BitmapOr), MySQL and MariaDB range-scan both; SQLite does
// neither with an OR in the WHERE clause, so there the two ranges are a
// UNION ALL of ids (and rt and rid appear twice: numbered placeholders).
func (s statements) activeOf(rt, rid string) string {
	res := "resource_type = " + rt + " AND resource_id = " + rid + " AND released_at IS NULL AND "
	if s.d.Kind == dialects.SQLite {
		return "id IN (SELECT id FROM " + s.holds + " WHERE " + res + "expires_at IS NULL UNION ALL SELECT id FROM " +
			s.holds + " WHERE " + res + "expires_at > " + s.clock() + ")"
	}
	return res + "(expires_at IS NULL OR expires_at > " + s.clock() + ")"
}

// lockResource returns the statements that lock the resource's row and read
// it back: the lock is "" where the read itself locks. The resource table
// and key column are given unquoted.
func (s statements) lockResource(table, key string) (lock, read string) {
	t, k := s.d.QuoteTable(table), s.d.QuoteIdent(key)
	switch s.d.Kind {
	case dialects.SQLite:
		// No row locks: writing the key back to itself takes the writer
		// lock before anything is read.
		return "UPDATE " + t + " SET " + k + " = " + k + " WHERE " + k + " = ?",
			"SELECT * FROM " + t + " WHERE " + k + " = ?"
	case dialects.SQLServer:
		return "", "SELECT * FROM " + t + " WITH (" + s.d.LockSQL(dialects.ForUpdate) + ") WHERE " + k + " = ?"
	}
	return "", "SELECT * FROM " + t + " WHERE " + k + " = ? " + s.d.LockSQL(dialects.ForUpdate)
}

// count reads the number of active holds of a resource, the id of the given
// holder's active hold if any, and the database clock. Arguments: holder,
// resource type, resource id.
//
// The count takes no lock, except with share on MySQL and MariaDB, where
// Acquire asks for one inside a caller's transaction: there a plain SELECT
// may read a REPEATABLE READ snapshot taken before the resource row was
// locked, and miss holds committed since; a locking read always sees the
// latest committed rows.
func (s statements) count(share bool) string {
	q := "SELECT COUNT(*), MIN(CASE WHEN " + s.holderIsArg(s.arg(1)) + " THEN id END), " + s.now +
		" FROM " + s.holds + " WHERE " + s.activeOf(s.arg(2), s.arg(3))
	if share {
		q += s.d.LatestRead()
	}
	return q
}

// holderIs is the condition "holder equals the bound value", byte for
// byte. MySQL and MariaDB compare strings with PAD SPACE collations
// (utf8mb4_bin included: "alice" = "alice "), and SQL Server ignores
// trailing spaces in = whatever the collation; comparing the values cast to
// binary is exact there, on a holder column of any type (tables made by an
// older Migrate have VARCHAR ... utf8mb4_bin). The holder is not in the
// index, so the cast costs no index use.
func (s statements) holderIs() string { return s.holderIsArg("?") }

// holderIsArg is holderIs with the placeholder p.
func (s statements) holderIsArg(p string) string {
	switch {
	case s.d.IsMySQLFamily():
		return "CAST(holder AS BINARY) = CAST(" + p + " AS BINARY)"
	case s.d.Kind == dialects.SQLServer:
		return "CAST(holder AS VARBINARY(510)) = CAST(" + p + " AS VARBINARY(510))"
	}
	return "holder = " + p
}

// isolation returns the query that reads the isolation level of the
// transaction it runs in, where a caller's transaction could read a
// snapshot older than the resource row's lock; "" where Acquire needs no
// check (MySQL and MariaDB count with a locking read instead, SQLite has one
// writer). PostgreSQL answers a name ("read committed"), SQL Server a
// number (5 is SNAPSHOT).
func (s statements) isolation() string {
	switch s.d.Kind {
	case dialects.Postgres:
		return "SELECT current_setting('transaction_isolation')"
	case dialects.SQLServer:
		return "SELECT CAST(transaction_isolation_level AS VARCHAR(2)) FROM sys.dm_exec_sessions WHERE session_id = @@SPID"
	}
	return ""
}

// snapshotIsolation reports whether an isolation level, as the isolation
// query answered it, reads one snapshot for the whole transaction. Such a
// transaction could count the holds as they were before the resource row
// was locked, so Acquire refuses to run in it. That includes PostgreSQL's
// SERIALIZABLE: its conflict detection covers only transactions that are
// serializable too, and Acquire's own transactions run at READ COMMITTED.
func (s statements) snapshotIsolation(level string) bool {
	switch s.d.Kind {
	case dialects.Postgres:
		l := strings.ToLower(strings.TrimSpace(level))
		return l != "read committed" && l != "read uncommitted"
	case dialects.SQLServer:
		return strings.TrimSpace(level) == "5"
	}
	return false
}

// isolationName names an isolation level, as the isolation query answered
// it, in the error that refuses it: SQL Server answers a number.
func (s statements) isolationName(level string) string {
	if s.d.Kind == dialects.SQLServer {
		return "SNAPSHOT"
	}
	return strings.ToUpper(level)
}

// ownReadCommitted reports whether Acquire's own transactions ask for READ
// COMMITTED (see call.run): PostgreSQL, SQL Server and TiDB.
func (s statements) ownReadCommitted() bool {
	return s.d.Kind == dialects.Postgres || s.d.Kind == dialects.SQLServer || s.d.Engine == dialects.TiDB
}

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
	return q + s.d.LatestRead()
}

// activeByID reads one hold if it is active. Argument: id.
func (s statements) activeByID() string {
	return "SELECT " + holdColumns + " FROM " + s.holds + " WHERE id = ? AND " + s.active()
}

// grant is PostgreSQL's count-and-insert in one statement, run once the
// resource row is locked: it inserts the hold when the holder has no active
// one and the active holds number fewer than the capacity, and returns the
// new row's id, created_at and expires_at; no row when it inserted nothing
// (full, or the holder's own hold exists: count tells which). One scan of
// the resource's holds counts both, as count does. The count is
// a plain read: at READ COMMITTED (Acquire's own transactions, and the only
// caller's transactions it accepts) the statement's snapshot is taken after
// the lock was granted. Arguments ($n): resource type, resource id, holder,
// TTL in ms (NULL for none), capacity.
func (s statements) grant() string {
	return "INSERT INTO " + s.holds + " (resource_type, resource_id, holder, created_at, expires_at) " +
		"SELECT CAST($1 AS VARCHAR), CAST($2 AS VARCHAR), CAST($3 AS VARCHAR), n.now, n.now + CAST($4 AS BIGINT) " +
		"FROM (SELECT " + s.now + " AS now) AS n, " +
		"(SELECT COUNT(*) AS total, COUNT(CASE WHEN holder = $3 THEN 1 END) AS mine FROM " + s.holds +
		" WHERE " + s.activeOf("$1", "$2") + ") AS k " +
		"WHERE k.mine = 0 AND k.total < CAST($5 AS BIGINT) " +
		"RETURNING id, created_at, expires_at"
}

// oneStatementGrant reports whether Acquire counts and inserts with grant
// (PostgreSQL). Elsewhere it counts, then inserts: an INSERT ... SELECT on
// InnoDB takes shared next-key locks on the holds it reads, which would make
// acquirers of neighbouring resources wait for each other.
func (s statements) oneStatementGrant() bool { return s.d.Kind == dialects.Postgres }

// insert adds a hold. Arguments: resource type, resource id, holder,
// created_at, expires_at. SQL Server answers the new id as a row (OUTPUT);
// the others through LastInsertId.
func (s statements) insert() string {
	cols := " (resource_type, resource_id, holder, created_at, expires_at) "
	if s.d.Kind == dialects.SQLServer {
		return "INSERT INTO " + s.holds + cols + "OUTPUT INSERTED.id VALUES (?, ?, ?, ?, ?)"
	}
	return "INSERT INTO " + s.holds + cols + "VALUES (?, ?, ?, ?, ?)"
}

// insertAnswersRow reports whether insert answers the new id as a row
// (SQL Server's OUTPUT) rather than through LastInsertId.
func (s statements) insertAnswersRow() bool { return s.d.Kind == dialects.SQLServer }

// releaseReturning is release answering the time it set, in the same
// statement, where the database can (PostgreSQL, SQL Server); "" elsewhere.
func (s statements) releaseReturning() string {
	switch s.d.Kind {
	case dialects.Postgres:
		return s.release() + " RETURNING released_at"
	case dialects.SQLServer:
		return "UPDATE " + s.holds + " SET released_at = " + s.now + " OUTPUT INSERTED.released_at WHERE id = ? AND " + s.active()
	}
	return ""
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
// caller's transaction. SQL Server has no RELEASE: its savepoints end with
// the transaction.
func (s statements) savepoint() string {
	if s.d.Kind == dialects.SQLServer {
		return "SAVE TRANSACTION " + savepointName
	}
	return "SAVEPOINT " + savepointName
}

func (s statements) rollbackTo() string {
	if s.d.Kind == dialects.SQLServer {
		return "ROLLBACK TRANSACTION " + savepointName
	}
	return "ROLLBACK TO SAVEPOINT " + savepointName
}

func (s statements) releaseSavepoint() string {
	if s.d.Kind == dialects.SQLServer {
		return ""
	}
	return "RELEASE SAVEPOINT " + savepointName
}

// createTable returns the DDL that creates the holds table and the index the
// count walks (resource, then the two columns that decide activity), each
// statement safe to run again. The columns are the same everywhere; what
// differs is the key's type, how strings compare exactly, and whether the
// index is declared inline.
func (s statements) createTable() []string {
	var create, id, str, tail, holder string
	inlineIndex := false
	switch s.d.Kind {
	case dialects.Postgres:
		create, id, str = "CREATE TABLE IF NOT EXISTS ", "BIGSERIAL PRIMARY KEY", "VARCHAR(%d) NOT NULL"
	case dialects.MySQL, dialects.MariaDB:
		// Binary collation for the resource: keys compare case-exactly. The
		// holder is VARBINARY, which does not pad: "alice" and "alice " are
		// two holders (utf8mb4_bin would make them one on MariaDB and
		// MySQL 5.7). The queries compare holders exactly on either type.
		create, id = "CREATE TABLE IF NOT EXISTS ", "BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY"
		str, tail, inlineIndex = "VARCHAR(%d) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL", " ENGINE=InnoDB", true
		holder = "VARBINARY(255) NOT NULL"
	case dialects.SQLServer:
		create = "IF OBJECT_ID(N'" + s.table + "', N'U') IS NULL CREATE TABLE "
		id, str, inlineIndex = "BIGINT IDENTITY(1,1) NOT NULL PRIMARY KEY", "NVARCHAR(%d) COLLATE Latin1_General_100_BIN2 NOT NULL", true
	case dialects.SQLite:
		// AUTOINCREMENT: a deleted hold's id is never handed out again, so a
		// stale Hold can never release someone else's.
		create, id, str = "CREATE TABLE IF NOT EXISTS ", "INTEGER PRIMARY KEY AUTOINCREMENT", "VARCHAR(%d) NOT NULL"
	default:
		return nil
	}
	if holder == "" {
		holder = fmt.Sprintf(str, 255)
	}
	_, bare := splitTable(s.table)
	index := s.d.QuoteIdent(bare + "_active")
	cols := "(resource_type, resource_id, released_at, expires_at)"
	table := create + s.holds + " (" +
		"id " + id + ", " +
		"resource_type " + fmt.Sprintf(str, 191) + ", " +
		"resource_id " + fmt.Sprintf(str, 191) + ", " +
		"holder " + holder + ", " +
		"created_at BIGINT NOT NULL, " +
		"expires_at BIGINT NULL, " +
		"released_at BIGINT NULL"
	if inlineIndex {
		return []string{table + ", INDEX " + index + " " + cols + ")" + tail}
	}
	on := s.holds
	if schema, _ := splitTable(s.table); schema != "" && s.d.Kind == dialects.SQLite {
		// SQLite names the schema on the index, never on its table:
		// CREATE INDEX "main"."t_active" ON "t" (...).
		index, on = s.d.QuoteIdent(schema)+"."+index, s.d.QuoteIdent(bare)
	}
	return []string{table + ")", "CREATE INDEX IF NOT EXISTS " + index + " ON " + on + " " + cols}
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
	b := func(q string) string { return bind(s.d, q) }
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
	if s.oneStatementGrant() {
		c.grant = s.grant() // numbered by hand: its arguments repeat
	}
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
	plain := "SELECT * FROM " + s.d.QuoteTable(table) + " WHERE " + s.d.QuoteIdent(key) + " = ?"
	lr := [3]string{bind(s.d, lock), bind(s.d, read), bind(s.d, plain)}
	lockCache.Store(k, lr)
	return lr
}
