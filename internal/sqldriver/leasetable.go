package sqldriver

import "github.com/lockplugin/lockplugin/dialects"

// LeaseTable phrases lease/sqlstore's statements over the lease table. The
// store keeps the algorithm (grant, refresh, release, the retries, the
// transaction of a LeaseTx); a database's LeaseTable says which statements
// it sends and how their answers come back.
//
// The table has one row per lock name ever taken, kept after release so
// that the fencing counter survives:
//
//	lock_name   the name, or "sha256:<hex>" of it (see lease/sqlstore's key)
//	owner       the owner token of the last holder
//	expires_at  epoch milliseconds by the database's clock; 0 never
//	            expires; -1 released
//	fence       the fencing counter, bumped on every acquisition
//
// A lease is held when expires_at is 0 or in the future. Released (-1)
// and expired leases are taken over by the same condition:
// expires_at <> 0 AND expires_at <= now.
//
// Statements are templates, which lease/sqlstore renders with the driver's
// phrasing. {t} is the quoted table, {now} the database clock in epoch ms
// (NowMillis), {exp} the new expiry for TTL {ttl} ms (0 stays 0:
// LeaseExpires), and {name}, {owner}, {ttl} and {fence} (an OUT parameter)
// are bind parameters (BindVar; BigintBindVar for {ttl}; one number per
// value where ReusesBindVars, else one per occurrence).
//
// Every acquire follows one rule, on every database: it takes the row when
// the lease is over (released or expired) or is already the caller's (a
// retried acquire whose first reply was lost). The fence is bumped unless
// the lease is the caller's and unexpired: that gets its own fence back and
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

	// Tx is non-nil where every operation must be one transaction that
	// reads the row under a lock, decides, writes and reads the fence back
	// (LeaseTx); then Acquire, AcquireReply and UpdateReply are not used.
	Tx() *LeaseTx
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
	// LeaseGuardHeld returns the row while owner holds it; a guard adds
	// its lock clause.
	LeaseGuardHeld = `SELECT 1 FROM {t} WHERE ` + LeaseHeld
)

// LeaseGuardLock is the lock clause of a guard's locking read: a shared
// lock, or an exclusive one where the database refuses shared locks.
func LeaseGuardLock(p Phrasing) string {
	if !p.Dialect().Supports(dialects.ForShare) {
		return p.LockSQL(dialects.ForUpdate) // TiDB, which refuses shared locks
	}
	return p.LockSQL(dialects.ForShare)
}
