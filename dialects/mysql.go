package dialects

// MySQL's rows of the capability matrix. NOWAIT, SKIP LOCKED, OF and so
// Claim came in 8.0.1; an unreported server version gets none of them. TiDB,
// behind the same dialector, has rows of its own (tidb.go) and never these.
var mysqlRows = rows{
	kind: MySQL,
	rules: []rule{
		{feature: ForUpdate},
		{feature: ForShare, note: "LOCK IN SHARE MODE before 8.0.1"},
		{feature: NoWait, since: from(8, 0, 1)},
		{feature: SkipLocked, since: from(8, 0, 1)},
		{feature: LockOf, since: from(8, 0, 1)},
		{feature: LockWait, note: "`SET SESSION innodb_lock_wait_timeout, lock_wait_timeout`, restored after"},
		{feature: AdvisoryLock},
		{feature: CapacityHolds},
		{feature: LeaseTable},
		{feature: FencedWrite},
		{feature: QueueClaim, since: from(8, 0, 1), note: "SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE, in a transaction"},
	},
}
