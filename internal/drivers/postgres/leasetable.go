package postgres

import (
	"strings"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// LeaseTable phrases the lease table store (lease/sqlstore).
func (p *Driver) LeaseTable() sqldriver.LeaseTable { return leaseTable{p} }

type leaseTable struct{ p *Driver }

// pgAcquire: an UPDATE that only matches a row the caller may take, and an
// INSERT ... ON CONFLICT DO NOTHING for a name without a row, in one
// statement. A refusal matches nothing in the UPDATE, and the INSERT does
// not even try when the statement sees the row: read only, without waiting
// for the holder's transaction in a conflict check. (An upsert's ON
// CONFLICT DO UPDATE ... WHERE would lock the row first, which takes a
// transaction id and waits for a WAL flush at commit.) A row inserted by a
// concurrent statement is not seen; then the INSERT's conflict refuses.
var pgAcquire = `WITH u AS (UPDATE {t} AS l SET owner = {owner}, expires_at = {exp}, ` +
	`fence = CASE WHEN l.owner = {owner} AND (l.expires_at = 0 OR l.expires_at > {now}) THEN l.fence ELSE ` + pgNextFence + ` END ` +
	`WHERE l.lock_name = {name} AND (l.owner = {owner} OR (l.expires_at <> 0 AND l.expires_at <= {now})) RETURNING l.fence), ` +
	`i AS (INSERT INTO {t} (lock_name, owner, expires_at, fence) SELECT {name}, {owner}, {exp}, ` + sqldriver.LeaseFirstFence + ` ` +
	`WHERE NOT EXISTS (SELECT 1 FROM u) AND NOT EXISTS (SELECT 1 FROM {t} WHERE lock_name = {name}) ` +
	`ON CONFLICT (lock_name) DO NOTHING RETURNING fence) ` +
	`SELECT fence FROM u UNION ALL SELECT fence FROM i`

var pgNextFence = sqldriver.LeaseNextFence("l.fence")

// pgPurge picks a batch in a subquery (DELETE has no LIMIT) and checks the
// condition again on the row it deletes: a row a concurrent acquire took
// meanwhile is re-read in its new version (READ COMMITTED's recheck) and
// no longer matches. The subquery reads the clock once, (SELECT {now}) as
// an InitPlan, not once per row it scans (clock_timestamp() is volatile):
// an earlier clock only keeps more rows.
var pgPurge = `DELETE FROM {t} WHERE lock_name IN (SELECT lock_name FROM {t} WHERE ` +
	strings.ReplaceAll(sqldriver.LeasePurgeable, "{now}", "(SELECT {now})") + ` LIMIT {limit}) AND ` + sqldriver.LeasePurgeable

// CreateTable is CREATE TABLE IF NOT EXISTS.
func (leaseTable) CreateTable(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (lock_name VARCHAR(191) NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL)`
}

// Acquire is pgAcquire; its fence is a result row.
func (leaseTable) Acquire() string                    { return pgAcquire }
func (leaseTable) AcquireReply() sqldriver.LeaseReply { return sqldriver.LeaseRow }
func (leaseTable) Release() string                    { return sqldriver.LeaseRelease }
func (leaseTable) Refresh() string                    { return sqldriver.LeaseRefresh }
func (leaseTable) UpdateReply() sqldriver.LeaseReply  { return sqldriver.LeaseRowsAffected }

// Guard is a locking read FOR SHARE: an acquire that would take the lease
// over is an UPDATE of the row, which waits for the guarded transaction.
func (l leaseTable) Guard() (string, bool) {
	return sqldriver.LeaseGuardHeld + " " + sqldriver.LeaseGuardLock(l.p), false
}

// Purge is pgPurge.
func (leaseTable) Purge() string { return pgPurge }

func (leaseTable) RetriesConflicts() bool                     { return true }
func (leaseTable) VersionCheck() (string, func(string) error) { return "", nil }
func (leaseTable) Tx() *sqldriver.LeaseTx                     { return nil }

// Listen is LISTEN on the channel, quoted: its case is kept, as
// pg_notify's text argument keeps it.
func (leaseTable) Listen(channel string) string { return `LISTEN "` + channel + `"` }
