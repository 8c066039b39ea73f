package sqlite

import (
	"database/sql"
	"strings"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Claim is one statement (SQLite 3.35 or later): UPDATE ... WHERE key IN
// (SELECT key ... LIMIT n) RETURNING; SQLite runs one writer at a time.
func (*Driver) Claim() sqldriver.Claim { return claim{} }

type claim struct{}

func (claim) OneStatement() bool { return true }

func (claim) Update(u sqldriver.ClaimUpdate) (string, []any) {
	var b strings.Builder
	vars := make([]any, 0, len(u.Values)+2)
	b.WriteString("UPDATE " + u.Table)
	vars = u.WriteSet(&b, vars)
	b.WriteString(" WHERE " + u.Key + " IN (SELECT " + u.Key + " FROM " + u.Table)
	vars = u.WriteWhere(&b, vars)
	b.WriteString(" ORDER BY " + u.Key + " LIMIT ?) RETURNING *")
	vars = append(vars, u.N)
	return b.String(), vars
}

func (claim) Isolation() sql.IsolationLevel { return sql.LevelDefault }
func (claim) CursorRead() bool              { return false }

func (claim) LeadingIndexColumns(table string) (string, []any) {
	return "SELECT ii.name FROM pragma_index_list(?) AS il, pragma_index_info(il.name) AS ii WHERE ii.seqno = 0", []any{table}
}

func (claim) IndexAdvice(name, table, column, key string) string {
	return sqldriver.ClaimIndex(name, table, column, key)
}
