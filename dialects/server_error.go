package dialects

// IsStatementError reports whether err is the database's own answer to a
// statement (it carries a database error code) on a connection that is
// still usable: the server received the statement and refused it, so a
// statement run outside a transaction did not take effect. A network
// error, a closed connection, a cancelled context, or the codes a server
// sends as it drops the session (PostgreSQL class 08 and 57P01-57P03,
// MySQL/MariaDB 1053 and 1927, SQL Server 596 and 233, Oracle ORA-03113,
// ORA-03114 and ORA-03135) are not: the
// statement may or may not have run.
func IsStatementError(err error) bool {
	c := codeOf(err)
	switch c.family {
	case Postgres:
		if len(c.state) == 5 && (c.state[:2] == "08" || c.state == "57P01" || c.state == "57P02" || c.state == "57P03") {
			return false
		}
		return c.state != ""
	case MySQL:
		return c.number != 1053 && c.number != 1927
	case SQLServer:
		return c.number != 596 && c.number != 233
	case Oracle:
		return c.number != 3113 && c.number != 3114 && c.number != 3135
	case SQLite:
		return true
	}
	return false
}
