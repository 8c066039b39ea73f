package dialects

// YugabyteDB's rows of the capability matrix. No YugabyteDB server can be
// had where lockplugin is tested, so these rows are decided from its
// documentation and source, conservatively: a feature is allowed only where
// the documented behaviour is PostgreSQL's for what lockplugin relies on,
// and everything else is refused before any SQL.
var yugabytedbRows = rows{
	kind:   Postgres,
	engine: YugabyteDB,
	rules: []rule{
		// FOR UPDATE as PostgreSQL's; under its default fail-on-conflict
		// concurrency control a conflicting locker gets 40001 instead of
		// waiting, which IsRetryable reports.
		{feature: ForUpdate, note: "from YugabyteDB's docs, not run live"},
		{feature: NoWait},
		// A fenced write is a plain UPDATE/DELETE with one more condition,
		// which it runs as PostgreSQL does.
		{feature: FencedWrite, note: "plain SQL, not run live"},
	},
	reasons: map[Feature]string{
		AdvisoryLock:     "YugabyteDB has no advisory locks before 2025.1, and lockplugin has not verified them since; use a row lock (ForUpdate) or a lease on Redis instead",
		AdvisoryXactLock: "YugabyteDB has no advisory locks before 2025.1, and lockplugin has not verified them since",
	},
}
