package dialects

// MariaDB's rows of the capability matrix, told from MySQL by its version
// string. NOWAIT and WAIT n came in 10.3, SKIP LOCKED (and so Claim) in
// 10.6; FOR UPDATE OF never.
var mariadbRows = rows{
	kind: MariaDB,
	rules: []rule{
		{feature: ForUpdate},
		{feature: ForShare, note: "LOCK IN SHARE MODE"},
		{feature: NoWait, since: from(10, 3, 0)},
		{feature: SkipLocked, since: from(10, 6, 0)},
		{feature: LockWait, since: from(10, 3, 0), note: "`WAIT n` (seconds, rounded up)"},
		{feature: AdvisoryLock},
		{feature: CapacityHolds},
		{feature: LeaseTable},
		{feature: FencedWrite},
		{feature: QueueClaim, since: from(10, 6, 0), note: "SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE, in a transaction"},
	},
}
