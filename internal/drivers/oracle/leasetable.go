package oracle

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// LeaseTable phrases the lease table store (lease/sqlstore).
func (*Driver) LeaseTable() sqldriver.LeaseTable { return leaseTable{} }

type leaseTable struct{}

// oracleAcquire: MERGE has no RETURNING, so one PL/SQL block merges and
// reads the fence into an OUT parameter (0 when refused). A concurrent
// insert of the same new name raises DUP_VAL_ON_INDEX: then the other
// session holds it.
var oracleAcquire = `DECLARE f NUMBER(19) := 0; BEGIN BEGIN ` +
	`MERGE INTO {t} l USING (SELECT {name} AS lock_name FROM dual) s ON (l.lock_name = s.lock_name) ` +
	`WHEN MATCHED THEN UPDATE SET l.owner = {owner}, l.expires_at = {exp}, ` +
	`l.fence = CASE WHEN l.owner = {owner} AND (l.expires_at = 0 OR l.expires_at > {now}) THEN l.fence ELSE ` + sqldriver.LeaseNextFence("l.fence") + ` END ` +
	`WHERE l.owner = {owner} OR (l.expires_at <> 0 AND l.expires_at <= {now}) ` +
	`WHEN NOT MATCHED THEN INSERT (lock_name, owner, expires_at, fence) VALUES ({name}, {owner}, {exp}, ` + sqldriver.LeaseFirstFence + `); ` +
	`IF SQL%ROWCOUNT = 1 THEN SELECT fence INTO f FROM {t} WHERE lock_name = {name}; END IF; ` +
	`EXCEPTION WHEN DUP_VAL_ON_INDEX THEN f := 0; END; {fence} := f; END;`

// oraclePurge stops at {limit} rows with ROWNUM; a row changed after the
// statement began is read again in its current version (write
// consistency), and kept unless it still matches.
const oraclePurge = `DELETE FROM {t} WHERE ` + sqldriver.LeasePurgeable + ` AND ROWNUM <= {limit}`

// CreateTable creates the table in a PL/SQL block that ignores ORA-00955
// (the name is already used).
func (leaseTable) CreateTable(table string) string {
	return `BEGIN EXECUTE IMMEDIATE 'CREATE TABLE ` + table + ` (lock_name VARCHAR2(191) NOT NULL PRIMARY KEY, owner VARCHAR2(64) NOT NULL, expires_at NUMBER(19) NOT NULL, fence NUMBER(19) NOT NULL)'; ` +
		`EXCEPTION WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF; END;`
}

// Acquire is oracleAcquire; its fence is the {fence} OUT parameter.
func (leaseTable) Acquire() string                    { return oracleAcquire }
func (leaseTable) AcquireReply() sqldriver.LeaseReply { return sqldriver.LeaseOut }
func (leaseTable) Release() string                    { return sqldriver.LeaseRelease }
func (leaseTable) Refresh() string                    { return sqldriver.LeaseRefresh }
func (leaseTable) UpdateReply() sqldriver.LeaseReply  { return sqldriver.LeaseRowsAffected }

// Guard is not supported: not yet tested on Oracle.
func (leaseTable) Guard() (string, bool) { return "", false }

// Purge is oraclePurge.
func (leaseTable) Purge() string { return oraclePurge }

func (leaseTable) RetriesConflicts() bool                     { return true }
func (leaseTable) VersionCheck() (string, func(string) error) { return "", nil }
func (leaseTable) Tx() *sqldriver.LeaseTx                     { return nil }
