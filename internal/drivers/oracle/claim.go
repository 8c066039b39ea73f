package oracle

import (
	"database/sql"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Claim is SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE, in one
// transaction, reading n rows of an unlimited, unordered cursor.
func (*Driver) Claim() sqldriver.Claim { return claim{} }

type claim struct{}

func (claim) OneStatement() bool                           { return false }
func (claim) Update(sqldriver.ClaimUpdate) (string, []any) { return "", nil }
func (claim) Isolation() sql.IsolationLevel                { return sql.LevelDefault }

// CursorRead is true. ORA-02014: no FOR UPDATE with a row limit. The
// claim reads n rows of the cursor; with SKIP LOCKED Oracle locks rows as
// they are fetched. No ORDER BY: sorting would lock every matching row
// first.
func (claim) CursorRead() bool { return true }

// LeadingIndexColumns is "": lockplugin does not read Oracle's catalog.
func (claim) LeadingIndexColumns(string) (string, []any) { return "", nil }

func (claim) IndexAdvice(name, table, column, key string) string {
	return sqldriver.ClaimIndex(name, table, column, key)
}
