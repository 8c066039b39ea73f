package postgres

import (
	"database/sql"
	"fmt"
	"strings"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Claim is one statement: UPDATE ... FROM (SELECT key ... ORDER BY key
// LIMIT n FOR UPDATE SKIP LOCKED) ... RETURNING.
func (p *Driver) Claim() sqldriver.Claim { return claim{p} }

type claim struct{ p *Driver }

// claimAlias names the claimed keys in UPDATE ... FROM.
const claimAlias = "lockplugin_claimed"

func (claim) OneStatement() bool { return true }

func (c claim) Update(u sqldriver.ClaimUpdate) (string, []any) {
	alias := c.p.QuoteIdent(claimAlias)
	var b strings.Builder
	vars := make([]any, 0, len(u.Values)+2)
	b.WriteString("UPDATE " + u.Table)
	vars = u.WriteSet(&b, vars)
	b.WriteString(" FROM (SELECT " + u.Key + " FROM " + u.Table)
	vars = u.WriteWhere(&b, vars)
	b.WriteString(" ORDER BY " + u.Key + " LIMIT ? FOR UPDATE SKIP LOCKED) AS " + alias)
	vars = append(vars, u.N)
	b.WriteString(" WHERE " + u.Table + "." + u.Key + " = " + alias + "." + u.Key + " RETURNING " + u.Table + ".*")
	return b.String(), vars
}

func (claim) Isolation() sql.IsolationLevel { return sql.LevelDefault }
func (claim) CursorRead() bool              { return false }

func (c claim) LeadingIndexColumns(table string) (string, []any) {
	return "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] WHERE i.indrelid = to_regclass($1)",
		[]any{c.p.QuoteTable(table)}
}

func (claim) IndexAdvice(name, table, column, key string) string {
	// A partial index holds only the claimable rows: a drained queue
	// costs it nothing.
	return fmt.Sprintf("%s (or a partial index: ... (%s) WHERE %s = 'queued')", sqldriver.ClaimIndex(name, table, column, key), key, column)
}
