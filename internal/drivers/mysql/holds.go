package mysql

import (
	"strconv"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Holds phrases package holds' statements for MySQL, and for MariaDB and
// TiDB, which inherit it: its phrasing is read from Outer, the embedding
// driver.
func (m *Driver) Holds() sqldriver.Holds { return NewHolds(m) }

// NewHolds is MySQL's holds family on m, for a driver that embeds m and
// overrides some of its methods (TiDB's OwnReadCommitted).
func NewHolds(m *Driver) HoldsFamily { return HoldsFamily{m} }

// HoldsFamily is MySQL's sqldriver.Holds.
type HoldsFamily struct{ m *Driver }

// Arg is ?: ActiveOf names each argument once.
func (HoldsFamily) Arg(int) string { return "?" }

// Clock is the plain clock: MySQL, MariaDB and TiDB fix UTC_TIMESTAMP(6)
// once per statement already and range-scan expires_at > it.
func (h HoldsFamily) Clock() string { return h.m.Outer().NowMillis() }

// ActiveOf ORs the two ranges (expires_at IS NULL, expires_at > Clock),
// which MySQL and MariaDB both range-scan: a hold that expired unreleased
// is skipped by the index, not read and filtered.
func (h HoldsFamily) ActiveOf(t sqldriver.HoldsTable, rt, rid string) string {
	return "resource_type = " + rt + " AND resource_id = " + rid + " AND released_at IS NULL AND " +
		"(expires_at IS NULL OR expires_at > " + h.Clock() + ")"
}

// HolderIs compares the values cast to binary: MySQL and MariaDB compare
// strings with PAD SPACE collations (utf8mb4_bin included: "alice" =
// "alice "). The cast is exact on a holder column of any type (tables made
// by an older Migrate have VARCHAR ... utf8mb4_bin). The holder is not in
// the index, so the cast costs no index use.
func (HoldsFamily) HolderIs(p string) string {
	return "CAST(holder AS BINARY) = CAST(" + p + " AS BINARY)"
}

// LockResource is one locking read: SELECT ... FOR UPDATE.
func (h HoldsFamily) LockResource(table, key string) (lock, read string) {
	return "", "SELECT * FROM " + table + " WHERE " + key + " = ? " + h.m.Outer().LockSQL(dialects.ForUpdate)
}

// Isolation is "": Acquire needs no check, since in a caller's transaction
// it counts with a locking read (LatestRead), which sees the latest
// committed rows whatever the isolation level.
func (HoldsFamily) Isolation() string { return "" }

// SnapshotIsolation is false: Isolation sends nothing.
func (HoldsFamily) SnapshotIsolation(string) bool { return false }

// IsolationName is never asked (SnapshotIsolation refuses nothing).
func (HoldsFamily) IsolationName(level string) string { return level }

// OwnReadCommitted is false: a locking read opens no snapshot on MySQL and
// MariaDB, so the first plain read (the count) comes after the lock.
func (HoldsFamily) OwnReadCommitted() bool { return false }

// Grant is "": Acquire counts, then inserts. An INSERT ... SELECT on
// InnoDB takes shared next-key locks on the holds it reads, which would
// make acquirers of neighbouring resources wait for each other.
func (HoldsFamily) Grant(sqldriver.HoldsTable) string { return "" }

// Insert is a plain INSERT; the id is LastInsertId's.
func (HoldsFamily) Insert(t sqldriver.HoldsTable) (string, bool) {
	return "INSERT INTO " + t.Quoted + " (resource_type, resource_id, holder, created_at, expires_at) VALUES (?, ?, ?, ?, ?)", false
}

// ReleaseReturning is "": the row is read again to learn the time set.
func (HoldsFamily) ReleaseReturning(sqldriver.HoldsTable, string) string { return "" }

// CreateTable creates the table with its index inline. Binary collation
// for the resource: keys compare case-exactly. The holder is VARBINARY,
// which does not pad: "alice" and "alice " are two holders (utf8mb4_bin
// would make them one on MariaDB and MySQL 5.7). The queries compare
// holders exactly on either type.
func (h HoldsFamily) CreateTable(t sqldriver.HoldsTable) []string {
	str := "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"
	return []string{
		"CREATE TABLE IF NOT EXISTS " + t.Quoted + " (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, " +
			"resource_type VARCHAR(191) " + str + ", resource_id VARCHAR(191) " + str + ", holder VARBINARY(255) NOT NULL, " +
			"created_at BIGINT NOT NULL, expires_at BIGINT NULL, released_at BIGINT NULL, " +
			"INDEX " + h.m.Outer().QuoteIdent(t.Bare+"_active") + " (resource_type, resource_id, released_at, expires_at)) ENGINE=InnoDB",
	}
}

// MigrateLock is "": MySQL, MariaDB and TiDB serialise CREATE TABLE IF NOT
// EXISTS themselves.
func (HoldsFamily) MigrateLock() string { return "" }

// MigrateKey is the name (never sent: MigrateLock is "").
func (HoldsFamily) MigrateKey(name string) any { return name }

// Purge is DELETE ... ORDER BY id LIMIT n.
func (HoldsFamily) Purge(t sqldriver.HoldsTable, endedBefore string, limit int) (string, bool) {
	return "DELETE FROM " + t.Quoted + " WHERE " + endedBefore + " ORDER BY id LIMIT " + strconv.Itoa(limit), false
}
