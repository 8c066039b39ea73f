package dialects

// PostgreSQL's rows of the capability matrix: every row lock, both advisory
// locks, and every mechanism. A look-alike behind the PostgreSQL dialector
// (CockroachDB, YugabyteDB) has rows of its own and never these.
var postgresRows = rows{
	kind: Postgres,
	rules: []rule{
		{feature: ForUpdate},
		{feature: ForShare},
		{feature: ForNoKeyUpdate},
		{feature: ForKeyShare},
		{feature: NoWait},
		{feature: SkipLocked},
		{feature: LockOf},
		{feature: LockWait, note: "`SET LOCAL lock_timeout`, restored after"},
		{feature: AdvisoryLock},
		{feature: AdvisoryXactLock},
		{feature: CapacityHolds},
		{feature: LeaseTable},
		{feature: FencedWrite},
		{feature: QueueClaim, note: "1 statement, UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING"},
	},
}
