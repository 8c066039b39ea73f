package dialects

// instead says what to use where a database lacks f for good (not a
// version away), for the refusals whose fix is not obvious from their
// name; "" when there is nothing better to say.
func instead(d Dialect, f Feature) string {
	switch {
	case (f == AdvisoryLock || f == AdvisoryXactLock) && d.Kind == SQLite:
		return "SQLite has no named locks; use a lease instead (lease.NewLocalStore for processes on one host, " +
			"or the table store of lease/sqlstore), or guard the rows themselves with holds or a lockplugin.Version column"
	case f == ForNoKeyUpdate && d.Supports(ForUpdate):
		return "FOR NO KEY UPDATE is PostgreSQL's weaker FOR UPDATE; use ForUpdate here, which locks at least as much"
	case f == ForKeyShare && d.Supports(ForShare):
		return "FOR KEY SHARE is PostgreSQL's weaker FOR SHARE; use ForShare here, which locks at least as much"
	}
	return ""
}
