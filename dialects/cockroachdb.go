package dialects

// CockroachDB's rows of the capability matrix. No CockroachDB server can be
// had where lockplugin is tested, so these rows are decided from its
// documentation and source, conservatively: a feature is allowed only where
// the documented behaviour is PostgreSQL's for what lockplugin relies on,
// and everything else is refused before any SQL.
var cockroachdbRows = rows{
	kind:   Postgres,
	engine: CockroachDB,
	rules: []rule{
		// FOR UPDATE takes an exclusive lock that makes other lockers wait
		// (or NOWAIT fail with 55P03), OF names the tables.
		{feature: ForUpdate, note: "from CockroachDB's docs, not run live"},
		{feature: NoWait},
		{feature: LockOf},
		// A fenced write is a plain UPDATE/DELETE with one more condition,
		// which it runs as PostgreSQL does.
		{feature: FencedWrite, note: "plain SQL, not run live"},
	},
	reasons: map[Feature]string{
		AdvisoryLock:     "CockroachDB's pg_advisory_lock functions are stubs that always succeed and lock nothing; use a row lock (ForUpdate) or a lease on Redis instead",
		AdvisoryXactLock: "CockroachDB's pg_advisory_xact_lock is a stub that always succeeds and locks nothing; use a row lock (ForUpdate) or a lease on Redis instead",
		ForShare:         "CockroachDB ignores FOR SHARE under SERIALIZABLE (its default) unless enable_shared_locking_for_serializable is set; use ForUpdate",
		SkipLocked:       "SKIP LOCKED on CockroachDB is not verified by lockplugin (it came in 23.1, and skips intents only in some cases)",
		QueueClaim:       "Claim needs SKIP LOCKED, which lockplugin has not verified on CockroachDB",
		CapacityHolds:    "holds run at READ COMMITTED, which CockroachDB runs only with sql.txn.read_committed_isolation.enabled, and retries (40001) where PostgreSQL waits; not verified",
	},
}
