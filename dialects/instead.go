package dialects

// instead says what to use where a database lacks f for good (not a
// version away), for the refusals whose fix is not obvious from their
// name: the database's own reason (its rows file), else one that holds on
// every database; "" when there is nothing better to say.
func instead(d Dialect, f Feature) string {
	if why := d.reason(f); why != "" {
		return why
	}
	switch {
	case f == ForNoKeyUpdate && d.Supports(ForUpdate):
		return "FOR NO KEY UPDATE is PostgreSQL's weaker FOR UPDATE; use ForUpdate here, which locks at least as much"
	case f == ForKeyShare && d.Supports(ForShare):
		return "FOR KEY SHARE is PostgreSQL's weaker FOR SHARE; use ForShare here, which locks at least as much"
	}
	return ""
}
