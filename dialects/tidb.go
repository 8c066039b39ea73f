package dialects

// TiDB's rows of the capability matrix, measured against tidb-server v8.4.0
// (unistore) with the conformance suites of tests/ and lockcheck. TiDB
// speaks MySQL 8.0's SQL, and lockplugin phrases its statements as for
// MySQL; what differs is below.
var tidbRules = []rule{
	{kind: MySQL, engine: TiDB, feature: ForUpdate},
	{kind: MySQL, engine: TiDB, feature: NoWait},
	{kind: MySQL, engine: TiDB, feature: LockOf},
	// advisory/tidb.go: GET_LOCK with its arguments behind ANY_VALUE,
	// which TiDB's planner does not fold, so each call runs once (a
	// prepared SELECT GET_LOCK(?, ?) runs twice); tries guarded by a NOWAIT
	// read of mysql.advisory_locks; waits of 1 s each, as nothing
	// interrupts a TiDB GET_LOCK; 1105 under contention read as "busy".
	// tests/advisory passes on TiDB v8.4.0, and 8 workers on one name made
	// 0 overlaps in 3 runs (199 of 200 entries overlapped unprotected).
	{kind: MySQL, engine: TiDB, feature: AdvisoryLock, note: "waits whole seconds; tries need SELECT on mysql.advisory_locks to answer at once"},
	{kind: MySQL, engine: TiDB, feature: CapacityHolds, note: "READ COMMITTED, in pessimistic transactions (TiDB's default)"},
}

var tidbReasons = map[Feature]string{
	ForShare:         "TiDB refuses FOR SHARE and LOCK IN SHARE MODE (error 1235), and with tidb_enable_noop_functions accepts them without taking a lock; use ForUpdate",
	SkipLocked:       "TiDB accepts SKIP LOCKED and ignores it: it takes no lock and returns rows that others hold, so two workers would claim the same row",
	QueueClaim:       "Claim needs SKIP LOCKED, which TiDB ignores (2 workers claimed 180 extra jobs of 200 with it)",
	AdvisoryXactLock: "TiDB, like MySQL, has no transaction-scoped named lock",
	// The table store reads the fence an UPDATE took from the OK
	// packet's insert id (LAST_INSERT_ID(expr)). TiDB retries a
	// pessimistic autocommit statement that met a write conflict, and the
	// insert id set by the attempt it threw away survives a retry that
	// matched no row: 8 workers on one name, 375 acquires reported
	// granted, 110 of them while another owner held the lease (102
	// overlaps). Refused until the store reads the row it wrote instead.
	// Measured (tests/fence TestI16FencedWriteRace): 8 writers with
	// successive fences on TiDB, and not one stale write was reported,
	// where every other database refuses 90-170 of 320.
	FencedWrite: "a stale write stopped by the fence is not reported as such on TiDB (TiDB retries a conflicting autocommit UPDATE and reports the outcome of the attempt it discarded); use the fence with PostgreSQL, MySQL, MariaDB or SQLite",
	LeaseTable:  "TiDB retries a conflicting UPDATE and keeps the insert id of the attempt it discarded, so the table store would report leases granted that another owner holds (110 of 375 acquires with 8 workers); use the Redis or local store",
}

// engineReason says why an engine's rows leave f out.
func engineReason(d Dialect, f Feature) string {
	var why string
	switch d.Engine {
	case TiDB:
		why = tidbReasons[f]
	case CockroachDB:
		why = cockroachReasons[f]
	case YugabyteDB:
		why = yugabyteReasons[f]
	}
	if why == "" {
		why = "lockplugin has not verified it on " + engineLabels[d.Engine] + ", and will not assume that " + kindLabel(d.Kind) + "'s behaviour holds there"
	}
	return why
}

// LatestRead returns the clause that makes a SELECT inside a transaction
// read the latest committed rows rather than the transaction's snapshot,
// with a leading space, or "" where a plain read already does (PostgreSQL
// and SQL Server at READ COMMITTED, SQLite). MySQL and MariaDB take a
// shared lock (LOCK IN SHARE MODE); TiDB, which refuses shared locks, an
// exclusive one (FOR UPDATE, which in its pessimistic transactions reads
// the latest commit).
func (d Dialect) LatestRead() string {
	switch {
	case d.Engine == TiDB:
		return " FOR UPDATE"
	case d.Kind == MySQL || d.Kind == MariaDB:
		return " " + Dialect{Kind: d.Kind, Major: d.Major, Minor: d.Minor, Patch: d.Patch}.LockSQL(ForShare)
	}
	return ""
}
