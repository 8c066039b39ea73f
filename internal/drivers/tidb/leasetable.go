package tidb

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// LeaseTable is MySQL's lease table, except that every operation is one
// pessimistic transaction (leaseTx).
//
// MySQL's statements read the fence an UPDATE took from the OK packet's
// insert id (LAST_INSERT_ID(expr)), and TiDB keeps the insert id of an
// attempt it threw away: it retries an autocommit UPDATE that met a write
// conflict, and a retry that then matches no row still reports the first
// attempt's fence (measured: 8 workers on one name, 110 of 375 acquires
// reported granted while another owner held the lease). So on TiDB each
// operation is one pessimistic transaction that reads the row under an
// exclusive lock (FOR UPDATE reads the latest commit there), decides from
// what it read, writes, and reads the fence back in the same transaction.
// Nothing depends on the insert id or on RowsAffected.
func (t *Driver) LeaseTable() sqldriver.LeaseTable { return leaseTable{t} }

type leaseTable struct{ t *Driver }

// mysql is the MySQL driver's lease table, which phrases through this
// driver (Outer).
func (l leaseTable) mysql() sqldriver.LeaseTable { return l.t.Driver.LeaseTable() }

// leaseTx are the statements of TiDB's transactions.
var leaseTx = sqldriver.LeaseTx{
	// BEGIN PESSIMISTIC, whatever tidb_txn_mode says: in an optimistic
	// transaction even a refusal's locking read conflicts at COMMIT
	// (measured with tidb_txn_mode = optimistic: 8 workers on one name
	// failed with 9007 after 3 attempts each).
	Begin: "BEGIN PESSIMISTIC",
	// Read locks the row and says whether it is the caller's and whether
	// it is live, by the database's clock.
	Read: `SELECT fence, CASE WHEN owner = {owner} THEN 1 ELSE 0 END, ` +
		`CASE WHEN expires_at = 0 OR expires_at > {now} THEN 1 ELSE 0 END FROM {t} WHERE lock_name = {name} FOR UPDATE`,
	// Take takes a released or expired lease: a new owner, a new expiry,
	// the fence bumped (to the clock floor at least).
	Take: `UPDATE {t} SET owner = {owner}, expires_at = {exp}, fence = ` + sqldriver.LeaseNextFence("fence") + ` WHERE lock_name = {name}`,
	// Renew renews the caller's own live lease (a retried acquire): its
	// fence stays.
	Renew: `UPDATE {t} SET expires_at = {exp} WHERE lock_name = {name}`,
	// Insert takes a name that has no row yet.
	Insert: `INSERT INTO {t} (lock_name, owner, expires_at, fence) VALUES ({name}, {owner}, {exp}, ` + sqldriver.LeaseFirstFence + `)`,
	// Fence reads the fence back inside the transaction that wrote it.
	Fence: `SELECT fence FROM {t} WHERE lock_name = {name} FOR UPDATE`,
	// Held locks the row while the caller holds it; release and refresh
	// then write it with the plain LeaseRelease and LeaseRefresh.
	Held: sqldriver.LeaseGuardHeld + ` FOR UPDATE`,
}

// Tx is leaseTx.
func (leaseTable) Tx() *sqldriver.LeaseTx { return &leaseTx }

// Release and Refresh are the plain statements, sent only after Held
// locked the row: they read no insert id.
func (leaseTable) Release() string                   { return sqldriver.LeaseRelease }
func (leaseTable) Refresh() string                   { return sqldriver.LeaseRefresh }
func (leaseTable) UpdateReply() sqldriver.LeaseReply { return sqldriver.LeaseRowsAffected }

// CreateTable, Guard (an exclusive lock: TiDB refuses shared ones) and
// the rest are MySQL's. Acquire and AcquireReply are not sent (Tx is).
func (l leaseTable) CreateTable(table string) string            { return l.mysql().CreateTable(table) }
func (l leaseTable) Acquire() string                            { return l.mysql().Acquire() }
func (l leaseTable) AcquireReply() sqldriver.LeaseReply         { return l.mysql().AcquireReply() }
func (l leaseTable) Guard() (string, bool)                      { return l.mysql().Guard() }
func (l leaseTable) RetriesConflicts() bool                     { return l.mysql().RetriesConflicts() }
func (l leaseTable) VersionCheck() (string, func(string) error) { return l.mysql().VersionCheck() }

// tidbPurge is one DELETE ... LIMIT, sent inside BEGIN PESSIMISTIC (Tx):
// a pessimistic DELETE reads each row's latest commit under its lock and
// locks only the rows it deletes, not those it scans (measured: a live
// lease's row stays free while the DELETE's transaction is open; tests/lease
// TestTablePurgeLocks). So TiDB needs not MySQL's two statements (a pick,
// then a DELETE by name) that keep InnoDB's scan from locking every row.
const tidbPurge = `DELETE FROM {t} WHERE ` + sqldriver.LeasePurgeable + ` LIMIT {limit}`

// Purge is tidbPurge. The table is not a LeasePurgePicker (no PurgePick).
func (leaseTable) Purge() string { return tidbPurge }
