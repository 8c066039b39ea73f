package dialects

// NowMillisSQL returns a SQL expression for the database server's current
// time in milliseconds since the Unix epoch, as an integer. Expiry decisions
// use it so that every application server agrees on one clock, the
// database's, however far their own clocks drift. It returns "" for an
// unknown dialect.
func (d Dialect) NowMillisSQL() string {
	switch d.Kind {
	case Postgres:
		return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
	case MySQL, MariaDB:
		// UTC_TIMESTAMP ignores the session time zone, which could otherwise
		// jump an hour at a daylight-saving change.
		return "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"
	case SQLServer:
		return "DATEDIFF_BIG(millisecond, '1970-01-01', SYSUTCDATETIME())"
	case Oracle:
		// Whole days and the time of day of the UTC interval since the
		// epoch: CAST(... AS DATE) would round to the second.
		const since = "(SYS_EXTRACT_UTC(SYSTIMESTAMP) - TIMESTAMP '1970-01-01 00:00:00')"
		return "(EXTRACT(DAY FROM " + since + ") * 86400000 + EXTRACT(HOUR FROM " + since + ") * 3600000 + " +
			"EXTRACT(MINUTE FROM " + since + ") * 60000 + TRUNC(EXTRACT(SECOND FROM " + since + ") * 1000))"
	case SQLite:
		return "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
	}
	return ""
}
