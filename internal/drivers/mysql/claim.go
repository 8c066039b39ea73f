package mysql

import (
	"database/sql"
	"strings"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Claim (MySQL 8.0.1+, and MariaDB 10.6+ through its embedding) is SELECT
// ... ORDER BY key LIMIT n FOR UPDATE SKIP LOCKED, then UPDATE, in one
// transaction at READ COMMITTED.
func (*Driver) Claim() sqldriver.Claim { return claim{} }

type claim struct{}

func (claim) OneStatement() bool                           { return false }
func (claim) Update(sqldriver.ClaimUpdate) (string, []any) { return "", nil }

// Isolation is READ COMMITTED, whatever the session's default: at
// InnoDB's REPEATABLE READ the locking read takes next-key locks on the
// index gaps, the UPDATE moves each row's index entry (state changes)
// into a gap another claimer holds, and concurrent claimers deadlock
// (error 1213) on the gap locks of the (state, id) index on most claims.
// At READ COMMITTED the read locks the rows only.
func (claim) Isolation() sql.IsolationLevel { return sql.LevelReadCommitted }
func (claim) CursorRead() bool              { return false }

// LeadingIndexColumns reads information_schema.statistics, in table's
// schema or else the connection's database.
func (claim) LeadingIndexColumns(table string) (string, []any) {
	schema, name := "", table
	if i := strings.IndexByte(table, '.'); i >= 0 {
		schema, name = table[:i], table[i+1:]
	}
	return "SELECT column_name FROM information_schema.statistics WHERE table_schema = COALESCE(NULLIF(?, ''), DATABASE()) AND table_name = ? AND seq_in_index = 1",
		[]any{schema, name}
}

func (claim) IndexAdvice(name, table, column, key string) string {
	return sqldriver.ClaimIndex(name, table, column, key)
}
