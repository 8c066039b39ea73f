package postgres

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Holds phrases package holds' statements for PostgreSQL.
func (p *Driver) Holds() sqldriver.Holds { return holds{p} }

type holds struct{ p *Driver }

// Arg is ?, numbered $n in order by package holds: ActiveOf names each
// argument once.
func (holds) Arg(int) string { return "?" }

// Clock is the clock as an uncorrelated subquery: clock_timestamp() is
// volatile, so compared directly it is evaluated per row and the index
// narrows only released_at IS NULL, leaving every hold that expired without
// a Release to be read again by every later count. As a subquery it runs
// once (an InitPlan) and expires_at > it becomes an index condition.
func (h holds) Clock() string { return "(SELECT " + h.p.NowMillis() + ")" }

// ActiveOf ORs the two index ranges (expires_at IS NULL, expires_at >
// Clock): PostgreSQL reads them as a BitmapOr, so a hold that expired
// unreleased is skipped by the index, not read and filtered.
func (h holds) ActiveOf(t sqldriver.HoldsTable, rt, rid string) string {
	return "resource_type = " + rt + " AND resource_id = " + rid + " AND released_at IS NULL AND " +
		"(expires_at IS NULL OR expires_at > " + h.Clock() + ")"
}

// HolderIs is a plain =: text compares byte for byte.
func (holds) HolderIs(p string) string { return "holder = " + p }

// LockResource is one locking read: SELECT ... FOR UPDATE.
func (h holds) LockResource(table, key string) (lock, read string) {
	return "", "SELECT * FROM " + table + " WHERE " + key + " = ? " + h.p.LockSQL(dialects.ForUpdate)
}

// Isolation reads the level by name ("read committed").
func (holds) Isolation() string { return "SELECT current_setting('transaction_isolation')" }

// SnapshotIsolation is anything but READ COMMITTED and READ UNCOMMITTED.
// That includes SERIALIZABLE: its conflict detection covers only
// transactions that are serializable too, and Acquire's own transactions
// run at READ COMMITTED.
func (holds) SnapshotIsolation(level string) bool {
	l := strings.ToLower(strings.TrimSpace(level))
	return l != "read committed" && l != "read uncommitted"
}

// IsolationName is the level as answered, in upper case.
func (holds) IsolationName(level string) string { return strings.ToUpper(level) }

// OwnReadCommitted is true: at REPEATABLE READ the first statement's
// snapshot predates the wait for the resource row's lock, and the count
// would miss the hold that the previous lock holder committed.
func (holds) OwnReadCommitted() bool { return true }

// Grant is PostgreSQL's count-and-insert in one statement, run once the
// resource row is locked: it inserts the hold when the holder has no active
// one and the active holds number fewer than the capacity, and returns the
// new row's id, created_at and expires_at; no row when it inserted nothing
// (full, or the holder's own hold exists: count tells which). One scan of
// the resource's holds counts both, as count does. The count is a plain
// read: at READ COMMITTED (Acquire's own transactions, and the only
// caller's transactions it accepts) the statement's snapshot is taken after
// the lock was granted. Its placeholders are numbered by hand: $1 and $3
// repeat.
func (h holds) Grant(t sqldriver.HoldsTable) string {
	return "INSERT INTO " + t.Quoted + " (resource_type, resource_id, holder, created_at, expires_at) " +
		"SELECT CAST($1 AS VARCHAR), CAST($2 AS VARCHAR), CAST($3 AS VARCHAR), n.now, n.now + CAST($4 AS BIGINT) " +
		"FROM (SELECT " + h.p.NowMillis() + " AS now) AS n, " +
		"(SELECT COUNT(*) AS total, COUNT(CASE WHEN " + h.HolderIs("$3") + " THEN 1 END) AS mine FROM " + t.Quoted +
		" WHERE " + h.ActiveOf(t, "$1", "$2") + ") AS k " +
		"WHERE k.mine = 0 AND k.total < CAST($5 AS BIGINT) " +
		"RETURNING id, created_at, expires_at"
}

// Insert is a plain INSERT, the id LastInsertId's. Acquire does not send
// it on PostgreSQL (Grant inserts); it is phrased as elsewhere.
func (holds) Insert(t sqldriver.HoldsTable) (string, bool) {
	return "INSERT INTO " + t.Quoted + " (resource_type, resource_id, holder, created_at, expires_at) VALUES (?, ?, ?, ?, ?)", false
}

// ReleaseReturning answers released_at with RETURNING.
func (h holds) ReleaseReturning(t sqldriver.HoldsTable, where string) string {
	return "UPDATE " + t.Quoted + " SET released_at = " + h.p.NowMillis() + " WHERE " + where + " RETURNING released_at"
}

// CreateTable creates the table, then its index in a second statement.
func (h holds) CreateTable(t sqldriver.HoldsTable) []string {
	return []string{
		"CREATE TABLE IF NOT EXISTS " + t.Quoted + " (id BIGSERIAL PRIMARY KEY, " +
			"resource_type VARCHAR(191) NOT NULL, resource_id VARCHAR(191) NOT NULL, holder VARCHAR(255) NOT NULL, " +
			"created_at BIGINT NOT NULL, expires_at BIGINT NULL, released_at BIGINT NULL)",
		"CREATE INDEX IF NOT EXISTS " + h.p.QuoteIdent(t.Bare+"_active") + " ON " + t.Quoted +
			" (resource_type, resource_id, released_at, expires_at)",
	}
}

// MigrateLock is a transaction-scoped advisory lock: concurrent CREATE
// TABLE IF NOT EXISTS statements race on PostgreSQL (duplicate pg_type
// rows, "already exists").
func (holds) MigrateLock() string { return "SELECT pg_advisory_xact_lock(?)" }

// MigrateKey is a bigint from the SHA-256 of the name.
func (holds) MigrateKey(name string) any {
	sum := sha256.Sum256([]byte(name))
	return int64(binary.BigEndian.Uint64(sum[:8]) &^ (1 << 63))
}

// Purge picks the batch's ids in a subquery (PostgreSQL has no DELETE ...
// LIMIT) and repeats the condition outside it, so that a row changed after
// the subquery read it (PostgreSQL re-checks the outer condition on the
// latest version) is deleted only if it still ended.
func (holds) Purge(t sqldriver.HoldsTable, endedBefore string, limit int) (string, bool) {
	return "DELETE FROM " + t.Quoted + " WHERE id IN (SELECT id FROM " + t.Quoted + " WHERE " + endedBefore +
		" ORDER BY id LIMIT " + strconv.Itoa(limit) + ") AND " + endedBefore, true
}
