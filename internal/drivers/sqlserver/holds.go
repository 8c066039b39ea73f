package sqlserver

import (
	"strconv"
	"strings"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Holds phrases package holds' statements for SQL Server.
func (p *Driver) Holds() sqldriver.Holds { return holds{p} }

type holds struct{ p *Driver }

// Arg is ?, numbered @pn in order by package holds: ActiveOf names each
// argument once.
func (holds) Arg(int) string { return "?" }

// Clock is the plain clock: SQL Server fixes SYSUTCDATETIME() once per
// statement already and range-scans expires_at > it.
func (h holds) Clock() string { return h.p.NowMillis() }

// ActiveOf ORs the two ranges (expires_at IS NULL, expires_at > Clock).
func (h holds) ActiveOf(t sqldriver.HoldsTable, rt, rid string) string {
	return "resource_type = " + rt + " AND resource_id = " + rid + " AND released_at IS NULL AND " +
		"(expires_at IS NULL OR expires_at > " + h.Clock() + ")"
}

// HolderIs compares the values cast to binary: SQL Server ignores trailing
// spaces in = whatever the collation. The holder is not in the index, so
// the cast costs no index use.
func (holds) HolderIs(p string) string {
	return "CAST(holder AS VARBINARY(510)) = CAST(" + p + " AS VARBINARY(510))"
}

// LockResource is one read with an update lock (UPDLOCK, ROWLOCK): U
// conflicts with other U, so the acquirers of one resource run one at a
// time.
func (h holds) LockResource(table, key string) (lock, read string) {
	return "", "SELECT * FROM " + table + " WITH (" + h.p.LockSQL(dialects.ForUpdate) + ") WHERE " + key + " = ?"
}

// Isolation reads the session's level as a number (5 is SNAPSHOT).
func (holds) Isolation() string {
	return "SELECT CAST(transaction_isolation_level AS VARCHAR(2)) FROM sys.dm_exec_sessions WHERE session_id = @@SPID"
}

// SnapshotIsolation is SNAPSHOT (5).
func (holds) SnapshotIsolation(level string) bool { return strings.TrimSpace(level) == "5" }

// IsolationName is SNAPSHOT, the only level refused.
func (holds) IsolationName(string) string { return "SNAPSHOT" }

// OwnReadCommitted is true: Acquire's own transactions run at READ
// COMMITTED whatever the session's default, so that the count never reads
// a snapshot older than the resource row's lock.
func (holds) OwnReadCommitted() bool { return true }

// Grant is "": Acquire counts, then inserts.
func (holds) Grant(sqldriver.HoldsTable) string { return "" }

// Insert answers the new id as a row (OUTPUT INSERTED.id).
func (holds) Insert(t sqldriver.HoldsTable) (string, bool) {
	return "INSERT INTO " + t.Quoted + " (resource_type, resource_id, holder, created_at, expires_at) OUTPUT INSERTED.id VALUES (?, ?, ?, ?, ?)", true
}

// ReleaseReturning answers released_at with OUTPUT.
func (h holds) ReleaseReturning(t sqldriver.HoldsTable, where string) string {
	return "UPDATE " + t.Quoted + " SET released_at = " + h.p.NowMillis() + " OUTPUT INSERTED.released_at WHERE " + where
}

// CreateTable creates the table, with its index inline, if OBJECT_ID does
// not find it. Strings compare exactly in a binary collation.
func (h holds) CreateTable(t sqldriver.HoldsTable) []string {
	str := "COLLATE Latin1_General_100_BIN2 NOT NULL"
	return []string{
		"IF OBJECT_ID(N'" + t.Name + "', N'U') IS NULL CREATE TABLE " + t.Quoted + " (id BIGINT IDENTITY(1,1) NOT NULL PRIMARY KEY, " +
			"resource_type NVARCHAR(191) " + str + ", resource_id NVARCHAR(191) " + str + ", holder NVARCHAR(255) " + str + ", " +
			"created_at BIGINT NOT NULL, expires_at BIGINT NULL, released_at BIGINT NULL, " +
			"INDEX " + h.p.QuoteIdent(t.Bare+"_active") + " (resource_type, resource_id, released_at, expires_at))",
	}
}

// MigrateLock takes an exclusive application lock owned by the
// transaction: concurrent IF OBJECT_ID ... CREATE TABLE statements race.
func (holds) MigrateLock() string {
	return "DECLARE @r int; EXEC @r = sp_getapplock @Resource = ?, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = -1; " +
		"IF @r < 0 RAISERROR('sp_getapplock returned %d', 16, 1, @r)"
}

// MigrateKey is the name itself.
func (holds) MigrateKey(name string) any { return name }

// Purge is DELETE TOP (n).
func (holds) Purge(t sqldriver.HoldsTable, endedBefore string, limit int) (string, bool) {
	return "DELETE TOP (" + strconv.Itoa(limit) + ") FROM " + t.Quoted + " WHERE " + endedBefore, false
}
