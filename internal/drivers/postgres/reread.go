package postgres

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// Reread phrases the version guard's and fenced writes' statements for
// PostgreSQL.
func (p *Driver) Reread() sqldriver.Reread { return reread{p} }

type reread struct{ p *Driver }

// VersionRead is query (LatestRead): READ COMMITTED reads the latest
// committed row anyway.
func (r reread) VersionRead(query string) string { return query + r.p.LatestRead() }

// FenceRead is query: READ COMMITTED reads the latest committed rows.
func (reread) FenceRead(query string) string { return query }

// BatchLock is FOR UPDATE: inside a transaction a guarded batch opens no
// savepoint on PostgreSQL. Every subtransaction that writes takes an XID of
// its own, which stays in the backend's cache of 64 until the transaction
// ends, released or not, and past 64 every later statement pays for the
// overflow. It locks the rows the statement guards first instead.
func (reread) BatchLock() string { return " FOR UPDATE" }

// UpsertUnchanged is IS NOT DISTINCT FROM excluded.col.
func (reread) UpsertUnchanged() (string, sqldriver.InsertedRef) {
	return " IS NOT DISTINCT FROM ", sqldriver.ExcludedRow
}

// UpsertFenceRefusal is "": ON CONFLICT ... DO UPDATE takes a WHERE.
func (reread) UpsertFenceRefusal() string { return "" }

// UpdatesIdentity is true.
func (reread) UpdatesIdentity() bool { return true }

// RawLexis: E'...' strings take backslash escapes, and $$...$$ (or
// $tag$...$tag$) are strings; $1 is a parameter.
func (reread) RawLexis() sqldriver.Lexis {
	return sqldriver.Lexis{EscapeStrings: true, DollarQuotes: true}
}
