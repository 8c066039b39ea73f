package sqldriver

import (
	"database/sql"
	"fmt"
	"strings"
)

// Claim phrases lockplugin.Claim's statements and its index checks.
//
// A database claims in one of two ways. Where OneStatement is true, the
// claim is one UPDATE that picks, updates and returns the rows (Update).
// Elsewhere it is a locking read (FOR UPDATE SKIP LOCKED) and an UPDATE by
// key, in one transaction at Isolation, both built by GORM; CursorRead
// says how the read is limited.
type Claim interface {
	// OneStatement reports whether the claim is the one statement Update
	// phrases, rather than a locking read and an UPDATE in a transaction.
	OneStatement() bool
	// Update is the one-statement claim of u, with "?" for GORM to bind
	// each value (and build each expression) in the database's own style,
	// and the values in the order of their "?"; "" where OneStatement is
	// false.
	Update(u ClaimUpdate) (query string, vars []any)
	// Isolation is the isolation level of the transaction a claim opens
	// for itself where OneStatement is false (sql.LevelDefault: the
	// session's own).
	Isolation() sql.IsolationLevel
	// CursorRead reports whether the locking read can have no row limit
	// (nor ORDER BY): the claim then reads n rows of its cursor.
	CursorRead() bool

	// LeadingIndexColumns is the catalog query that lists the first
	// column of each index of table (unquoted, possibly schema-qualified),
	// one row each, and its arguments; "" where lockplugin does not read
	// this database's catalog.
	LeadingIndexColumns(table string) (query string, args []any)
	// IndexAdvice is the statement, for a person to run, that creates
	// index name on table (column, key): the index a claim whose condition
	// tests column, taking rows in key order, needs.
	IndexAdvice(name, table, column, key string) string
}

// ClaimUpdate is what a one-statement claim is made of.
type ClaimUpdate struct {
	Table  string   // the table, quoted
	Key    string   // its primary key column, quoted
	Cols   []string // the columns to set, quoted
	Values []any    // their values (or expressions), in Cols order
	Where  any      // the condition, bound as one value; nil for none
	N      int      // how many rows at most
}

// WriteSet writes " SET c1=?,c2=?" to b and returns vars with the values
// appended.
func (u ClaimUpdate) WriteSet(b *strings.Builder, vars []any) []any {
	b.WriteString(" SET ")
	for i, c := range u.Cols {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c)
		b.WriteString("=?")
		vars = append(vars, u.Values[i])
	}
	return vars
}

// WriteWhere writes " WHERE (?)" to b and returns vars with the condition
// appended; nothing where u has no condition.
func (u ClaimUpdate) WriteWhere(b *strings.Builder, vars []any) []any {
	if u.Where == nil {
		return vars
	}
	b.WriteString(" WHERE (?)")
	return append(vars, u.Where)
}

// ClaimIndex is the plain CREATE INDEX name ON table (column, key).
func ClaimIndex(name, table, column, key string) string {
	return fmt.Sprintf("CREATE INDEX %s ON %s (%s, %s)", name, table, column, key)
}
