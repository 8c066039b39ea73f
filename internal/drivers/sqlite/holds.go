package sqlite

import (
	"strconv"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Holds phrases package holds' statements for SQLite.
func (p *Driver) Holds() sqldriver.Holds { return holds{p} }

type holds struct{ p *Driver }

// Arg is ?n: ActiveOf repeats the resource's arguments.
func (holds) Arg(n int) string { return "?" + strconv.Itoa(n) }

// Clock is the clock as an uncorrelated subquery, which SQLite runs once
// per statement, so that expires_at > it is an index condition.
func (h holds) Clock() string { return "(SELECT " + h.p.NowMillis() + ")" }

// ActiveOf is a UNION ALL of the ids in the two index ranges
// (expires_at IS NULL, expires_at > Clock): SQLite uses neither range with
// an OR in the WHERE clause. rt and rid appear twice: Arg numbers them.
func (h holds) ActiveOf(t sqldriver.HoldsTable, rt, rid string) string {
	res := "resource_type = " + rt + " AND resource_id = " + rid + " AND released_at IS NULL AND "
	return "id IN (SELECT id FROM " + t.Quoted + " WHERE " + res + "expires_at IS NULL UNION ALL SELECT id FROM " +
		t.Quoted + " WHERE " + res + "expires_at > " + h.Clock() + ")"
}

// HolderIs is a plain =: text compares byte for byte.
func (holds) HolderIs(p string) string { return "holder = " + p }

// LockResource writes the key back to itself: SQLite has no row locks, and
// the UPDATE takes the writer lock before anything is read.
func (holds) LockResource(table, key string) (lock, read string) {
	return "UPDATE " + table + " SET " + key + " = " + key + " WHERE " + key + " = ?",
		"SELECT * FROM " + table + " WHERE " + key + " = ?"
}

// Isolation is "": one writer at a time, and the writer lock is the first
// statement's.
func (holds) Isolation() string { return "" }

// SnapshotIsolation is false: Isolation sends nothing.
func (holds) SnapshotIsolation(string) bool { return false }

// IsolationName is never asked (SnapshotIsolation refuses nothing).
func (holds) IsolationName(level string) string { return level }

// OwnReadCommitted is false: the writer lock is taken by the first
// statement.
func (holds) OwnReadCommitted() bool { return false }

// Grant is "": Acquire counts, then inserts.
func (holds) Grant(sqldriver.HoldsTable) string { return "" }

// Insert is a plain INSERT; the id is LastInsertId's.
func (holds) Insert(t sqldriver.HoldsTable) (string, bool) {
	return "INSERT INTO " + t.Quoted + " (resource_type, resource_id, holder, created_at, expires_at) VALUES (?, ?, ?, ?, ?)", false
}

// ReleaseReturning is "": the row is read again to learn the time set.
func (holds) ReleaseReturning(sqldriver.HoldsTable, string) string { return "" }

// CreateTable creates the table, then its index in a second statement.
// AUTOINCREMENT: a deleted hold's id is never handed out again, so a stale
// Hold can never release someone else's. SQLite names the schema on the
// index, never on its table: CREATE INDEX "main"."t_active" ON "t" (...).
func (h holds) CreateTable(t sqldriver.HoldsTable) []string {
	index, on := h.p.QuoteIdent(t.Bare+"_active"), t.Quoted
	if t.Schema != "" {
		index, on = h.p.QuoteIdent(t.Schema)+"."+index, h.p.QuoteIdent(t.Bare)
	}
	return []string{
		"CREATE TABLE IF NOT EXISTS " + t.Quoted + " (id INTEGER PRIMARY KEY AUTOINCREMENT, " +
			"resource_type VARCHAR(191) NOT NULL, resource_id VARCHAR(191) NOT NULL, holder VARCHAR(255) NOT NULL, " +
			"created_at BIGINT NOT NULL, expires_at BIGINT NULL, released_at BIGINT NULL)",
		"CREATE INDEX IF NOT EXISTS " + index + " ON " + on + " (resource_type, resource_id, released_at, expires_at)",
	}
}

// MigrateLock is "": SQLite serialises DDL under its writer lock.
func (holds) MigrateLock() string { return "" }

// MigrateKey is the name (never sent: MigrateLock is "").
func (holds) MigrateKey(name string) any { return name }

// Purge picks the batch's ids in a subquery (SQLite's DELETE ... LIMIT is
// a compile-time option) and repeats the condition outside it, as on
// PostgreSQL: a row changed after the subquery read it is deleted only if
// it still ended.
func (holds) Purge(t sqldriver.HoldsTable, endedBefore string, limit int) (string, bool) {
	return "DELETE FROM " + t.Quoted + " WHERE id IN (SELECT id FROM " + t.Quoted + " WHERE " + endedBefore +
		" ORDER BY id LIMIT " + strconv.Itoa(limit) + ") AND " + endedBefore, true
}
