package dialects

// SQL Server's rows of the capability matrix. Its row locks are table
// hints, which the notes name.
var sqlserverRows = rows{
	kind: SQLServer,
	rules: []rule{
		{feature: ForUpdate, note: "WITH (XLOCK, ROWLOCK)"},
		{feature: ForShare, note: "WITH (REPEATABLEREAD, ROWLOCK)"},
		{feature: NoWait, note: "NOWAIT table hint"},
		{feature: SkipLocked, note: "READPAST table hint"},
		{feature: LockOf, note: "hints only on the named tables"},
		{feature: LockWait, note: "`SET LOCK_TIMEOUT`, restored after"},
		{feature: AdvisoryLock},
		{feature: AdvisoryXactLock},
		{feature: CapacityHolds},
		{feature: LeaseTable},
		{feature: FencedWrite},
		{feature: QueueClaim, note: "1 statement, UPDATE TOP (n) ... WITH (UPDLOCK, READPAST, ROWLOCK) OUTPUT"},
	},
}
