package mysql

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// LeaseTable phrases the lease table store (lease/sqlstore) for MySQL and
// MariaDB; TiDB overrides it.
func (m *Driver) LeaseTable() sqldriver.LeaseTable { return leaseTable{m} }

type leaseTable struct{ m *Driver }

// MySQL and MariaDB have no RETURNING. One INSERT ... ON DUPLICATE KEY
// UPDATE per attempt, granted or refused, and the fence comes back in the
// OK packet's insert id, which the last LAST_INSERT_ID(expr) the statement
// evaluated sets (the table has no AUTO_INCREMENT): the first fence from
// VALUES for a new name; for an existing row the update always evaluates
// one more, the new fence when the caller may take the row (mysqlTakeable), else 0 (fence +
// LAST_INSERT_ID(0) leaves the fence as it was). That leaves RowsAffected,
// which depends on CLIENT_FOUND_ROWS, out of it. The assignments are right
// whether the server assigns left to right, later ones seeing the new
// values (MySQL, MariaDB's default), or all from the old row (MariaDB's
// SIMULTANEOUS_ASSIGNMENT): fence, first, reads the old owner and expiry;
// owner then only changes when the row is taken; and expires_at's test,
// reading the owner, holds after a take (the owner is now the caller)
// exactly as before it; no test reads the fence. A refusal changes no
// value, but like any upsert it locks the row for the statement.
//
// The update reads the clock and the caller's values from the row the
// statement tried to insert, VALUES(col), evaluated once: VALUES(fence) is
// {now} * 1000 (the first fence), so {now} there is VALUES(fence) DIV 1000
// and the next fence max(fence + 1, VALUES(fence)) (sqldriver.LeaseNextFence's
// rule); VALUES(owner) and VALUES(expires_at) are the caller's owner and
// new expiry. The clock is read twice per statement, not nine times, and
// four values are bound, not eleven: a refusal costs about what a plain
// upsert does (issue 27; BenchmarkRefusal in tests/lease compares them).
// MySQL 8.0.20 and later deprecate VALUES() in favour of a row alias (a
// warning, not an error); MariaDB has no row alias, and the alias form
// has not been run here on a MySQL server.
var (
	mysqlAcquire = `INSERT INTO {t} (lock_name, owner, expires_at, fence) VALUES ({name}, {owner}, {exp}, LAST_INSERT_ID(` + sqldriver.LeaseFirstFence + `)) ` +
		`ON DUPLICATE KEY UPDATE ` +
		`fence = IF(` + mysqlTakeable + `, LAST_INSERT_ID(IF(owner = VALUES(owner) AND (expires_at = 0 OR expires_at > ` + mysqlNow + `), fence, GREATEST(fence + 1, VALUES(fence)))), fence + LAST_INSERT_ID(0)), ` +
		`owner = IF(` + mysqlTakeable + `, VALUES(owner), owner), ` +
		`expires_at = IF(` + mysqlTakeable + `, VALUES(expires_at), expires_at)`
	// mysqlTakeable: the caller may take the row (it is the caller's, or
	// released or expired).
	mysqlTakeable = `owner = VALUES(owner) OR (expires_at <> 0 AND expires_at <= ` + mysqlNow + `)`
	// mysqlNow is {now} inside the update: the clock the statement read
	// for the first fence.
	mysqlNow = `VALUES(fence) DIV 1000`
	// fence = LAST_INSERT_ID(fence) makes a matched row report a non-zero
	// insert id even when the update changes nothing (a TTL-0 refresh of a
	// TTL-0 lease), which RowsAffected would report as 0.
	mysqlRelease = `UPDATE {t} SET expires_at = -1, fence = LAST_INSERT_ID(fence) WHERE ` + sqldriver.LeaseHeld
	mysqlRefresh = `UPDATE {t} SET expires_at = {exp}, fence = LAST_INSERT_ID(fence) WHERE ` + sqldriver.LeaseHeld
	// The purge is two statements (sqldriver.LeasePurgePicker). A single
	// DELETE ... WHERE <purgeable> LIMIT n has no index for its condition:
	// InnoDB scans the primary key and, under REPEATABLE READ, takes a
	// next-key lock on every row it reads, deleted or not, live leases'
	// rows and the gaps between them included, until the statement ends,
	// so the acquires, refreshes and releases of live leases (and the
	// inserts of new names) wait for the whole scan. A derived table
	// (DELETE ... JOIN (SELECT ... LIMIT n)) reads under shared next-key
	// locks, which block them alike (both measured on MariaDB 10.11: a
	// refresh of a live lease the statement did not delete timed out
	// behind it; tests/lease TestTablePurgeLocks).
	//
	// mysqlPurgePick is a plain SELECT, a consistent read that takes no
	// row lock (in autocommit, under every isolation level, SERIALIZABLE
	// included); LIMIT stops the scan at a batch.
	mysqlPurgePick = `SELECT lock_name FROM {t} WHERE ` + sqldriver.LeasePurgeable + ` LIMIT {limit}`
	// mysqlPurge deletes the picked names by primary key: InnoDB locks
	// each of those rows alone (no gap), reads its latest version and
	// deletes it only if it is purgeable still, so a row an acquire took
	// since the pick is kept. FORCE INDEX (PRIMARY), which only the
	// multiple-table form of DELETE takes: left to itself the optimizer
	// chose a full scan, which locks every row again, for a list of 470
	// names in a table of 2000 (MariaDB 10.11; 999 names in 2400 got the
	// index). At most mysqlPurgeNames names a statement: MariaDB turns an
	// IN list of in_predicate_conversion_threshold (1000 by default)
	// constants or more into a join with a table of values, and scans the
	// table for it, index hint or not (measured with 1000 names inlined,
	// as interpolateParams=true sends them).
	mysqlPurge      = `DELETE {t} FROM {t} FORCE INDEX (PRIMARY) WHERE ` + sqldriver.LeasePurgeable + ` AND lock_name IN ({names})`
	mysqlPurgeNames = 500
)

// CreateTable is CREATE TABLE IF NOT EXISTS, InnoDB, with ASCII binary
// columns.
func (leaseTable) CreateTable(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (lock_name VARCHAR(191) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY, owner VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL) ENGINE=InnoDB`
}

// Acquire is mysqlAcquire: one statement, granted or refused; the fence,
// 0 when refused, is its insert id.
func (leaseTable) Acquire() string                    { return mysqlAcquire }
func (leaseTable) AcquireReply() sqldriver.LeaseReply { return sqldriver.LeaseInsertID }

// Release and Refresh report a matched row by its fence, in the insert id
// (see mysqlRelease).
func (leaseTable) Release() string                   { return mysqlRelease }
func (leaseTable) Refresh() string                   { return mysqlRefresh }
func (leaseTable) UpdateReply() sqldriver.LeaseReply { return sqldriver.LeaseInsertID }

// Guard is a locking read under a shared lock (LOCK IN SHARE MODE on
// MariaDB and MySQL before 8.0.1; an exclusive one where the engine
// refuses shared locks), phrased by the outer driver.
func (l leaseTable) Guard() (string, bool) {
	return sqldriver.LeaseGuardHeld + " " + sqldriver.LeaseGuardLock(l.m.Outer()), false
}

// PurgePick and Purge are mysqlPurgePick and mysqlPurge, of at most
// mysqlPurgeNames names.
func (leaseTable) PurgePick() (string, int) { return mysqlPurgePick, mysqlPurgeNames }
func (leaseTable) Purge() string            { return mysqlPurge }

func (leaseTable) RetriesConflicts() bool                     { return true }
func (leaseTable) VersionCheck() (string, func(string) error) { return "", nil }
func (leaseTable) Tx() *sqldriver.LeaseTx                     { return nil }
