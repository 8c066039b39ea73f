package sqldriver

import "github.com/lockplugin/lockplugin/dialects"

// LeaseTable phrases lease/sqlstore's statements over the lease table. The
// store keeps the algorithm (grant, refresh, release, the retries, the
// transaction of a LeaseTx); a database's LeaseTable says which statements
// it sends and how their answers come back.
//
// The table has one row per lock name taken and not yet purged:
//
//	lock_name   the name, or "sha256:<hex>" of it (see lease/sqlstore's key)
//	owner       the owner token of the last holder
//	expires_at  epoch milliseconds by the database's clock; 0 never
//	            expires; -1 released
//	fence       the fencing token of the last grant
//
// Fences have a clock floor (LeaseNextFence): every grant hands out
// max(previous fence + 1, {now} * 1000), the database clock in
// microseconds' resolution, and a new row starts at {now} * 1000. A name is
// not granted 1000 times in a millisecond, so a fence does not run ahead of
// the clock, and fence / 1000 is no earlier than the epoch ms of its grant.
// That is what lets a row go (LeasePurgeable): once its lease is over and
// it was last granted more than the retention ago, its fence is below
// (now - retention) * 1000, and the next grant of the name, on a new row,
// starts at now * 1000, above it. Only a database clock that steps back by
// more than the retention could hand out a fence below one handed out
// before. (lease/sqlstore never purges with an age under a minute: an
// acquire may read the clock for a new row's fence before the deletion it
// then follows; see its PurgeMinAge.) (Rows of the counter fences of old versions, 1, 2, 3..., jump up
// to the clock at their next grant, and are purgeable at once when over.)
//
// A lease is held when expires_at is 0 or in the future. Released (-1)
// and expired leases are taken over by the same condition:
// expires_at <> 0 AND expires_at <= now.
//
// Statements are templates, which lease/sqlstore renders with the driver's
// phrasing. {t} is the quoted table, {now} the database clock in epoch ms
// (NowMillis), {exp} the new expiry for TTL {ttl} ms (0 stays 0:
// LeaseExpires), {limit} the number of rows one purge deletes at most (a
// literal), {names} a purge's list of names (LeasePurgePicker), and {name}, {owner}, {ttl}, {age} (ms) and {fence} (an OUT
// parameter) are bind parameters (BindVar; BigintBindVar for {ttl} and
// {age}; one number per value where ReusesBindVars, else one per
// occurrence).
//
// Every acquire follows one rule, on every database: it takes the row when
// the lease is over (released or expired) or is already the caller's (a
// retried acquire whose first reply was lost). The fence is bumped
// (LeaseNextFence) unless the lease is the caller's and unexpired: that
// gets its own fence back and
// a new expiry. Any other row is left alone, and where the database allows
// it the refusal writes nothing: no row lock, no transaction id, no log
// flush, so that waiters polling a held name do not slow its holder.
type LeaseTable interface {
	// CreateTable is the DDL that creates table (quoted) and does nothing
	// when it exists.
	CreateTable(table string) string

	// Acquire is the acquire template, sent once per attempt.
	Acquire() string
	// AcquireReply is how Acquire's fence comes back (0 or no row when
	// refused).
	AcquireReply() LeaseReply
	// Release and Refresh are the templates that end and extend the
	// caller's lease; they match only while it holds it.
	Release() string
	Refresh() string
	// UpdateReply is how Release and Refresh report a matched row: a count
	// or an insert id above 0.
	UpdateReply() LeaseReply

	// Guard is the template of lease/sqlstore's Guard, run inside the
	// caller's transaction, and whether it is a write that changes
	// nothing (held when it matched one row) rather than a locking read
	// (held when it returns a row). "" when Guard is not supported there.
	Guard() (tmpl string, write bool)

	// RetriesConflicts reports whether a statement the database chose as a
	// deadlock victim or failed to serialise is sent again.
	RetriesConflicts() bool

	// VersionCheck is a query for the server's version and what the store
	// needs of it; "" and nil when it needs nothing.
	VersionCheck() (query string, check func(version string) error)

	// Purge is the template that deletes at most {limit} rows that are
	// LeasePurgeable for the age {age} (ms), the condition checked again
	// by the database on each row under its row lock, so that a row an
	// acquire took meanwhile (fence now * 1000, not below the cutoff) is
	// kept. Where Tx is non-nil it is sent inside Tx's Begin. Where the
	// LeaseTable is a LeasePurgePicker, it deletes the rows its PurgePick
	// returned instead: {names} stands for them.
	Purge() string

	// Tx is non-nil where every operation must be one transaction that
	// reads the row under a lock, decides, writes and reads the fence back
	// (LeaseTx); then Acquire, AcquireReply and UpdateReply are not used.
	Tx() *LeaseTx
}

// LeasePurgePicker is a LeaseTable whose purge is two statements, on a
// database (InnoDB) where a DELETE whose condition no index serves locks
// every row it scans, under REPEATABLE READ until its transaction ends:
// live leases' rows included. PurgePick is a plain SELECT of the
// lock_name of at most {limit} rows that are LeasePurgeable for {age}, a
// read that takes no row lock; Purge then deletes those names by primary
// key, each row LeasePurgeable again under its row lock, and locks no
// other row. In Purge, {names} is a list of picked names, one bind
// parameter each, and must come after every other parameter of the
// template; maxNames is the longest list one Purge statement takes (the
// store sends a batch's names in as many statements as that needs).
type LeasePurgePicker interface {
	LeaseTable
	PurgePick() (tmpl string, maxNames int)
}

// LeaseHeldReader is a LeaseTable whose Acquire first reads whether
// another owner holds the name (HeldByOther: a row while one does) and
// refuses on a row without sending the acquire, a write. It suits a
// database where a refused write costs more than a read and a second
// statement costs no round trip: SQLite, whose refused upsert takes the
// database's write lock, and compiles many times slower than a read
// (modernc.org/sqlite prepares every statement anew). The acquire still
// decides alone: a name freed after the read is granted by it, and one
// taken after the read is refused by it (the conformance suite's
// ConcurrentAcquire and ExpiredTakenOver run both races on SQLite:
// tests/lease TestConformance/table/sqlite).
type LeaseHeldReader interface {
	LeaseTable
	HeldByOther() string
}

// LeaseReply is how a lease statement's answer comes back.
type LeaseReply int

const (
	// LeaseRow: a result row (RETURNING, OUTPUT); none when refused.
	LeaseRow LeaseReply = iota
	// LeaseInsertID: the OK packet's insert id, set by LAST_INSERT_ID(expr).
	LeaseInsertID
	// LeaseOut: the {fence} OUT parameter.
	LeaseOut
	// LeaseRowsAffected: the count of matched rows.
	LeaseRowsAffected
)

// LeaseTx are the statements of an operation that is one transaction
// (lease/sqlstore's inTx): Begin begins it on a pinned connection; Read
// locks the row and returns its fence, 1 when it is the caller's and 1
// when it is live; Take, Renew and Insert write it; Fence reads the fence
// back; Held locks the row while the caller holds it, before Release or
// Refresh writes it.
type LeaseTx struct {
	Begin                                  string
	Read, Take, Renew, Insert, Fence, Held string
}

// Templates every database shares.
const (
	// LeaseExpires is {exp}: the new expiry.
	LeaseExpires = `CASE WHEN {ttl} = 0 THEN 0 ELSE {now} + {ttl} END`
	// LeaseHeld matches the row while owner holds it.
	LeaseHeld = `lock_name = {name} AND owner = {owner} AND (expires_at = 0 OR expires_at > {now})`
	// LeaseRelease and LeaseRefresh are the plain release and refresh,
	// whose count of matched rows says whether the caller held the lease.
	LeaseRelease = `UPDATE {t} SET expires_at = -1 WHERE ` + LeaseHeld
	LeaseRefresh = `UPDATE {t} SET expires_at = {exp} WHERE ` + LeaseHeld
	// LeaseFirstFence is the fence of a new row: the database clock in
	// ms times 1000.
	LeaseFirstFence = `{now} * 1000`
	// LeasePurgeable matches a row that may be deleted without letting a
	// fence go backwards: its lease is over (released or expired) and its
	// fence is below ({now} - {age}) * 1000, so it was last granted more
	// than {age} ms ago, and any grant from now on starts above it.
	LeasePurgeable = `expires_at <> 0 AND expires_at <= {now} AND fence < ({now} - {age}) * 1000`
	// LeaseHeldByOther returns a row while an owner other than {owner}
	// holds {name} (LeaseHeldReader).
	LeaseHeldByOther = `SELECT 1 FROM {t} WHERE lock_name = {name} AND owner <> {owner} AND (expires_at = 0 OR expires_at > {now})`
	// LeaseGuardHeld returns the row while owner holds it; a guard adds
	// its lock clause.
	LeaseGuardHeld = `SELECT 1 FROM {t} WHERE ` + LeaseHeld
)

// LeaseNextFence is the fence a grant hands out after the row's fence
// (the column fence, as the statement names it: "l.fence", "fence"):
// max(fence + 1, {now} * 1000), as a CASE, which every database reads
// alike (SQL Server before 2022 has no GREATEST). Strictly above the fence
// before, and never below the clock floor.
func LeaseNextFence(fence string) string { return LeaseNextFenceAbove(fence, LeaseFirstFence) }

// LeaseNextFenceAbove is LeaseNextFence with the clock floor read from
// floor, an expression equal to LeaseFirstFence that the statement has
// already computed (SQLite's excluded.fence: the row it would have
// inserted).
func LeaseNextFenceAbove(fence, floor string) string {
	return `CASE WHEN ` + fence + ` + 1 > ` + floor + ` THEN ` + fence + ` + 1 ELSE ` + floor + ` END`
}

// LeaseGuardLock is the lock clause of a guard's locking read: a shared
// lock, or an exclusive one where the database refuses shared locks.
func LeaseGuardLock(p Phrasing) string {
	if !p.Dialect().Supports(dialects.ForShare) {
		return p.LockSQL(dialects.ForUpdate) // TiDB, which refuses shared locks
	}
	return p.LockSQL(dialects.ForShare)
}
