package sqlserver

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// LeaseTable phrases the lease table store (lease/sqlstore).
func (*Driver) LeaseTable() sqldriver.LeaseTable { return leaseTable{} }

type leaseTable struct{}

// mssqlAcquire: MERGE under HOLDLOCK, so that two sessions inserting the
// same new name serialise instead of one failing on the primary key. Its
// SET reads the row as it was before the update.
var mssqlAcquire = `MERGE INTO {t} WITH (HOLDLOCK) AS l USING (SELECT {name} AS lock_name) AS s ON l.lock_name = s.lock_name ` +
	`WHEN MATCHED AND (l.owner = {owner} OR (l.expires_at <> 0 AND l.expires_at <= {now})) THEN UPDATE SET owner = {owner}, expires_at = {exp}, ` +
	`fence = CASE WHEN l.owner = {owner} AND (l.expires_at = 0 OR l.expires_at > {now}) THEN l.fence ELSE ` + sqldriver.LeaseNextFence("l.fence") + ` END ` +
	`WHEN NOT MATCHED THEN INSERT (lock_name, owner, expires_at, fence) VALUES ({name}, {owner}, {exp}, ` + sqldriver.LeaseFirstFence + `) ` +
	`OUTPUT inserted.fence;`

// mssqlPurge is DELETE TOP: the update locks of its scan are converted
// to exclusive ones on the rows it deletes, whose condition it reads as
// committed.
const mssqlPurge = `DELETE TOP ({limit}) FROM {t} WHERE ` + sqldriver.LeasePurgeable

// CreateTable creates the table unless OBJECT_ID finds it, with binary
// collations.
func (leaseTable) CreateTable(table string) string {
	return `IF OBJECT_ID(N'` + table + `', N'U') IS NULL CREATE TABLE ` + table + ` (lock_name NVARCHAR(191) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY, owner NVARCHAR(64) COLLATE Latin1_General_100_BIN2 NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL);`
}

// Acquire is mssqlAcquire; its fence is the OUTPUT row.
func (leaseTable) Acquire() string                    { return mssqlAcquire }
func (leaseTable) AcquireReply() sqldriver.LeaseReply { return sqldriver.LeaseRow }
func (leaseTable) Release() string                    { return sqldriver.LeaseRelease }
func (leaseTable) Refresh() string                    { return sqldriver.LeaseRefresh }
func (leaseTable) UpdateReply() sqldriver.LeaseReply  { return sqldriver.LeaseRowsAffected }

// Guard is not supported: not yet tested on SQL Server.
func (leaseTable) Guard() (string, bool) { return "", false }

// Purge is mssqlPurge.
func (leaseTable) Purge() string { return mssqlPurge }

func (leaseTable) RetriesConflicts() bool                     { return true }
func (leaseTable) VersionCheck() (string, func(string) error) { return "", nil }
func (leaseTable) Tx() *sqldriver.LeaseTx                     { return nil }
