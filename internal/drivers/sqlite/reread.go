package sqlite

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// Reread phrases the version guard's and fenced writes' statements for
// SQLite.
func (p *Driver) Reread() sqldriver.Reread { return reread{p} }

type reread struct{ p *Driver }

// VersionRead is query (LatestRead): SQLite has one writer, and reads the
// latest committed row anyway.
func (r reread) VersionRead(query string) string { return query + r.p.LatestRead() }

// FenceRead is query.
func (reread) FenceRead(query string) string { return query }

// BatchLock is "": a savepoint.
func (reread) BatchLock() string { return "" }

// UpsertUnchanged is IS excluded.col (SQLite's IS is null-safe).
func (reread) UpsertUnchanged() (string, sqldriver.InsertedRef) {
	return " IS ", sqldriver.ExcludedRow
}

// UpsertFenceRefusal is "": ON CONFLICT ... DO UPDATE takes a WHERE.
func (reread) UpsertFenceRefusal() string { return "" }

// UpdatesIdentity is true.
func (reread) UpdatesIdentity() bool { return true }

// RawLexis: [name] is a quoted identifier.
func (reread) RawLexis() sqldriver.Lexis { return sqldriver.Lexis{BracketIdents: true} }
