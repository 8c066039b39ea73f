package dialects

import "strings"

// LockSQL returns how the database phrases a row-lock feature: the clause
// keywords for FOR UPDATE, FOR SHARE, NOWAIT and SKIP LOCKED, or the table
// hint on SQL Server. It returns "" when the database does not support f.
func (d Dialect) LockSQL(f Feature) string {
	if !d.Supports(f) {
		return ""
	}
	if d.Kind == SQLServer {
		// The update lock (U): it conflicts with other U and X locks, so
		// readers that all take it (holds' resource row) run one at a
		// time. Lock clauses use LockClauseSQL, which differs here.
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

// LockClauseSQL returns how lockplugin's row-lock clauses phrase f. It is
// LockSQL except on SQL Server, where the lock modes must conflict as FOR
// UPDATE and FOR SHARE do on PostgreSQL: an exclusive (X) row lock for
// ForUpdate conflicts with every other lock, and a shared (S) one held to
// the end of the transaction for ForShare conflicts with X and lets other
// S in. LockSQL's UPDLOCK (U) would not do for ForUpdate: U and S are
// compatible both ways in Microsoft's lock compatibility matrix, so a
// ForShare reader would get in beside it and the holder's UPDATE would
// then wait for it or deadlock (1205). HOLDLOCK would not do for ForShare:
// it is SERIALIZABLE, and takes key-range locks on the gaps around the
// rows too.
func (d Dialect) LockClauseSQL(f Feature) string {
	if d.Kind == SQLServer && d.Supports(f) {
		switch f {
		case ForUpdate:
			return "XLOCK, ROWLOCK"
		case ForShare:
			return "REPEATABLEREAD, ROWLOCK"
		}
	}
	return d.LockSQL(f)
}

// LatestRead returns the clause that makes a SELECT inside a transaction
// read the latest committed rows rather than the transaction's snapshot,
// with a leading space, or "" where a plain read already does (PostgreSQL
// and SQL Server at READ COMMITTED, SQLite). MySQL and MariaDB take a
// shared lock (LOCK IN SHARE MODE); TiDB, which refuses shared locks, an
// exclusive one (FOR UPDATE, which in its pessimistic transactions reads
// the latest commit).
func (d Dialect) LatestRead() string {
	switch {
	case d.Engine == TiDB:
		return " FOR UPDATE"
	case d.Kind == MySQL || d.Kind == MariaDB:
		return " " + Dialect{Kind: d.Kind, Major: d.Major, Minor: d.Minor, Patch: d.Patch}.LockSQL(ForShare)
	}
	return ""
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

// QuoteTable quotes a table name that may be qualified by a schema
// ("holds" or "billing.holds"), part by part. Validate the name first with
// ValidTableName.
//
// On Oracle the schema is folded to upper case before it is quoted: a
// schema is a user, made by CREATE USER app, and Oracle resolves that
// unquoted name as APP; a quoted "app" names a user that does not exist.
// The table part keeps its case, so that it names the table lockplugin's
// own DDL made under that quoted name (and Claim quotes it as GORM's
// Oracle dialector does); QuoteIdent keeps the case too.
func (d Dialect) QuoteTable(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		if d.Kind == Oracle && i < len(parts)-1 && plainIdent(p) {
			p = strings.ToUpper(p)
		}
		parts[i] = d.QuoteIdent(p)
	}
	return strings.Join(parts, ".")
}

// ValidTableName reports whether name is a table name that lockplugin will
// splice into SQL it builds itself: an identifier of letters, digits and
// underscores, not starting with a digit, optionally qualified by one
// schema of the same form. The table part may be at most maxTable bytes
// (a caller that derives index names from it leaves room for a suffix);
// the schema part at most 63, PostgreSQL's limit.
func ValidTableName(name string, maxTable int) bool {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return false
	}
	for i, p := range parts {
		limit := 63
		if i == len(parts)-1 {
			limit = maxTable
		}
		if len(p) == 0 || len(p) > limit || !plainIdent(p) {
			return false
		}
	}
	return true
}

func plainIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
