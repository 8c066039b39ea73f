package dialects

// TiDB's rows of the capability matrix, measured against tidb-server v8.4.0
// (unistore) with the conformance suites of tests/ and lockcheck. TiDB
// speaks MySQL 8.0's SQL, and lockplugin phrases its statements as for
// MySQL; what differs is below.
var tidbRows = rows{
	kind:   MySQL,
	engine: TiDB,
	rules: []rule{
		{feature: ForUpdate},
		{feature: NoWait},
		{feature: LockOf},
		{feature: LockWait, note: "`WAIT n` (seconds, rounded up)"},
		// advisory/tidb.go: GET_LOCK with its arguments behind ANY_VALUE,
		// which TiDB's planner does not fold, so each call runs once (a
		// prepared SELECT GET_LOCK(?, ?) runs twice); tries guarded by a NOWAIT
		// read of mysql.advisory_locks; waits of 1 s each, as nothing
		// interrupts a TiDB GET_LOCK; 1105 under contention read as "busy".
		// tests/advisory passes on TiDB v8.4.0, and 8 workers on one name made
		// 0 overlaps in 3 runs (199 of 200 entries overlapped unprotected).
		{feature: AdvisoryLock, note: "waits whole seconds; tries need SELECT on mysql.advisory_locks to answer at once"},
		// lease/sqlstore/tx.go and internal/drivers/tidb/leasetable.go: each operation one transaction that reads
		// the row FOR UPDATE, decides, writes and reads the fence back, where
		// the MySQL statements read the fence from the insert id, which TiDB
		// keeps from an attempt it retried (with those, 8 workers: 4 double
		// grants and 7 fence regressions in 52 grants; now 0 in 3 x 200).
		{feature: LeaseTable, note: "a transaction per operation"},
		// Fenced writes: tests/fence passes on TiDB. A stale write in GORM's
		// default transaction waits for the row as on MySQL; an autocommit one
		// (SkipDefaultTransaction) is retried by TiDB after the newer write
		// commits, and comes back with 0 rows, so it is reported stale
		// (TestFencedWriteMeetsNewerCommit: 5 of 5; the unfenced baseline
		// landed the stale write). 8 writers: 0 stale writes reported done, in
		// and out of transactions (unfenced: 22 of 320).
		{feature: FencedWrite},
		{feature: CapacityHolds, note: "READ COMMITTED, in pessimistic transactions (TiDB's default)"},
	},
	reasons: map[Feature]string{
		ForShare:         "TiDB refuses FOR SHARE and LOCK IN SHARE MODE (error 1235), and with tidb_enable_noop_functions accepts them without taking a lock; use ForUpdate",
		SkipLocked:       "TiDB accepts SKIP LOCKED and ignores it: it takes no lock and returns rows that others hold, so two workers would claim the same row",
		QueueClaim:       "Claim needs SKIP LOCKED, which TiDB ignores (2 workers claimed 180 extra jobs of 200 with it)",
		AdvisoryXactLock: "TiDB, like MySQL, has no transaction-scoped named lock",
	},
}
