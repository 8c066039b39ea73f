package oracle

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// Reread phrases the version guard's and fenced writes' statements for
// Oracle.
func (p *Driver) Reread() sqldriver.Reread { return reread{p} }

type reread struct{ p *Driver }

// VersionRead is query (LatestRead): READ COMMITTED reads the latest
// committed row.
func (r reread) VersionRead(query string) string { return query + r.p.LatestRead() }

// FenceRead is query.
func (reread) FenceRead(query string) string { return query }

// BatchLock is "": a savepoint.
func (reread) BatchLock() string { return "" }

// UpsertUnchanged is NoInsertedRef: GORM's upsert is a MERGE.
func (reread) UpsertUnchanged() (string, sqldriver.InsertedRef) { return "", sqldriver.NoInsertedRef }

// UpsertFenceRefusal: the MERGE's update branch takes no condition.
func (reread) UpsertFenceRefusal() string {
	return "GORM sends its upsert as a MERGE whose WHEN MATCHED THEN UPDATE carries no condition lockplugin can add, so the update of an existing row cannot compare fences"
}

// UpdatesIdentity is true.
func (reread) UpdatesIdentity() bool { return true }

// RawLexis is standard SQL's.
func (reread) RawLexis() sqldriver.Lexis { return sqldriver.Lexis{} }
