package dialects

// LockSQL returns how the database phrases a row-lock feature: the clause
// keywords for FOR UPDATE, FOR SHARE, NOWAIT and SKIP LOCKED, or the table
// hint on SQL Server. It returns "" when the database does not support f.
func (d Dialect) LockSQL(f Feature) string {
	if !d.Supports(f) {
		return ""
	}
	if d.Kind == SQLServer {
		switch f {
		case ForUpdate:
			return "UPDLOCK, ROWLOCK"
		case ForShare:
			return "HOLDLOCK, ROWLOCK"
		case NoWait:
			return "NOWAIT"
		case SkipLocked:
			return "READPAST"
		}
		return ""
	}
	if f == ForShare && (d.Kind == MariaDB || (d.Kind == MySQL && !d.AtLeast(8, 0, 1))) {
		return "LOCK IN SHARE MODE"
	}
	return string(f)
}

// QuoteIdent quotes an identifier the way the database expects, doubling
// any quote character inside it. Callers validate identifiers first; this
// only makes a valid one safe to splice into SQL.
func (d Dialect) QuoteIdent(name string) string {
	open, closing := `"`, `"`
	switch d.Kind {
	case MySQL, MariaDB:
		open, closing = "`", "`"
	case SQLServer:
		open, closing = "[", "]"
	}
	out := make([]byte, 0, len(name)+2)
	out = append(out, open...)
	for i := 0; i < len(name); i++ {
		if string(name[i]) == closing {
			out = append(out, closing...)
		}
		out = append(out, name[i])
	}
	return string(append(out, closing...))
}
