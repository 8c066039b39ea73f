package sqlserver

import (
	"database/sql"
	"strings"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Claim is one statement: UPDATE TOP (n) ... WITH (UPDLOCK, READPAST,
// ROWLOCK) ... OUTPUT INSERTED.* (the table must have no enabled triggers,
// which OUTPUT without INTO refuses; TOP picks rows in no particular
// order).
func (*Driver) Claim() sqldriver.Claim { return claim{} }

type claim struct{}

func (claim) OneStatement() bool { return true }

func (claim) Update(u sqldriver.ClaimUpdate) (string, []any) {
	var b strings.Builder
	vars := make([]any, 0, len(u.Values)+2)
	b.WriteString("UPDATE TOP (?) " + u.Table + " WITH (UPDLOCK, READPAST, ROWLOCK)")
	vars = append(vars, u.N)
	vars = u.WriteSet(&b, vars)
	b.WriteString(" OUTPUT INSERTED.*")
	vars = u.WriteWhere(&b, vars)
	return b.String(), vars
}

func (claim) Isolation() sql.IsolationLevel { return sql.LevelDefault }
func (claim) CursorRead() bool              { return false }

// LeadingIndexColumns is "": lockplugin does not read SQL Server's catalog.
func (claim) LeadingIndexColumns(string) (string, []any) { return "", nil }

func (claim) IndexAdvice(name, table, column, key string) string {
	return sqldriver.ClaimIndex(name, table, column, key)
}
