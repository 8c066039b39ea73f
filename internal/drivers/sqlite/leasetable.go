package sqlite

import (
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// LeaseTable phrases the lease table store (lease/sqlstore).
func (*Driver) LeaseTable() sqldriver.LeaseTable { return leaseTable{} }

type leaseTable struct{}

// sqliteAcquire: SQLite has no data-modifying WITH; it serialises writers
// anyway, so one upsert whose update only happens on a row the caller may
// take; RETURNING yields no row when it is refused. A refusal changes no
// page.
//
// The update reads the clock from the row it would have inserted
// (sqliteNow), not by {now} again: each julianday('now') is evaluated
// anew, about 4 µs each on modernc.org/sqlite (measured once by hand,
// interleaved: SELECT of it 7.6 µs, SELECT 1 3.8 µs), and the update's
// clause held four of them.
var sqliteAcquire = `INSERT INTO {t} AS l (lock_name, owner, expires_at, fence) VALUES ({name}, {owner}, {exp}, ` + sqldriver.LeaseFirstFence + `) ` +
	`ON CONFLICT (lock_name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, ` +
	`fence = CASE WHEN l.owner = excluded.owner AND (l.expires_at = 0 OR l.expires_at > ` + sqliteNow + `) THEN l.fence ELSE ` +
	sqldriver.LeaseNextFenceAbove("l.fence", "excluded.fence") + ` END ` +
	`WHERE l.owner = excluded.owner OR (l.expires_at <> 0 AND l.expires_at <= ` + sqliteNow + `) RETURNING fence`

// sqliteNow is {now} inside the update: the first fence is the clock in
// ms times 1000, an integer, so its integer division by 1000 is the clock
// the statement read (one value per statement: SQLite's 'now' does not
// move within a step).
const sqliteNow = `excluded.fence / 1000`

// sqlitePurge picks a batch in a subquery (DELETE ... LIMIT needs a
// compile option); SQLite serialises writers, and the condition is checked
// again all the same.
const sqlitePurge = `DELETE FROM {t} WHERE lock_name IN (SELECT lock_name FROM {t} WHERE ` + sqldriver.LeasePurgeable + ` LIMIT {limit}) AND ` + sqldriver.LeasePurgeable

// sqliteGuard takes SQLite's writer lock by a write that changes nothing.
const sqliteGuard = `UPDATE {t} SET fence = fence WHERE ` + sqldriver.LeaseHeld

// CreateTable is CREATE TABLE IF NOT EXISTS, WITHOUT ROWID.
func (leaseTable) CreateTable(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (lock_name VARCHAR(191) NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL) WITHOUT ROWID`
}

// HeldByOther makes a refusal a read (sqldriver.LeaseHeldReader): the
// upsert, even refused, takes SQLite's write lock, and waits for it behind
// every writer of the database, and it compiles several times slower than
// the read (tests/lease BenchmarkRefusalFloor/sqlite: the upsert's
// refusal was 3.6x the one-upsert baseline's at 84c4c98, the read's is
// 0.49x; a CPU profile put most of the upsert's time in sqlite3_prepare).
func (leaseTable) HeldByOther() string { return sqldriver.LeaseHeldByOther }

// Acquire is sqliteAcquire; its fence is a result row.
func (leaseTable) Acquire() string                    { return sqliteAcquire }
func (leaseTable) AcquireReply() sqldriver.LeaseReply { return sqldriver.LeaseRow }
func (leaseTable) Release() string                    { return sqldriver.LeaseRelease }
func (leaseTable) Refresh() string                    { return sqldriver.LeaseRefresh }
func (leaseTable) UpdateReply() sqldriver.LeaseReply  { return sqldriver.LeaseRowsAffected }

// Guard is sqliteGuard, a write: the database's writer lock.
func (leaseTable) Guard() (string, bool) { return sqliteGuard, true }

// Purge is sqlitePurge.
func (leaseTable) Purge() string { return sqlitePurge }

// RetriesConflicts is false: SQLite's BUSY is not retried, its
// busy_timeout has already waited.
func (leaseTable) RetriesConflicts() bool { return false }

// VersionCheck needs SQLite 3.35.0 or later, for RETURNING.
func (leaseTable) VersionCheck() (string, func(string) error) {
	return "SELECT sqlite_version()", func(v string) error {
		if !dialects.New("sqlite", v).AtLeast(3, 35, 0) {
			return &dialects.UnsupportedError{Dialect: "SQLite " + v, Feature: string(dialects.LeaseTable), Reason: "needs SQLite 3.35.0 or later for RETURNING"}
		}
		return nil
	}
}

func (leaseTable) Tx() *sqldriver.LeaseTx { return nil }
