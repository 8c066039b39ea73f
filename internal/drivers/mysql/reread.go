package mysql

import (
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Reread phrases the version guard's and fenced writes' statements for
// MySQL, and for MariaDB and TiDB through their phrasing (Outer).
func (m *Driver) Reread() sqldriver.Reread { return reread{m} }

type reread struct{ m *Driver }

// VersionRead is a locking read (LatestRead of the outer driver: LOCK IN
// SHARE MODE or FOR SHARE; FOR UPDATE on TiDB): a plain SELECT in a
// REPEATABLE READ transaction reads its snapshot, which still shows the row
// as it was before the newer write (or the delete) that made the guard
// fail.
func (r reread) VersionRead(query string) string { return query + r.m.Outer().LatestRead() }

// FenceRead is the outer driver's latest read (a shared lock; FOR UPDATE
// on TiDB, which has no shared lock): a plain read would see the
// transaction's snapshot, older than the row the UPDATE met, and could
// report a write refused for a newer fence as one that found no row.
func (r reread) FenceRead(query string) string { return query + r.m.Outer().LatestRead() }

// BatchLock is "": a savepoint.
func (reread) BatchLock() string { return "" }

// UpsertUnchanged is <=> VALUES(col): ON DUPLICATE KEY UPDATE names the
// inserted value with VALUES(), and <=> is null-safe.
func (reread) UpsertUnchanged() (string, sqldriver.InsertedRef) {
	return " <=> ", sqldriver.ValuesFunc
}

// UpsertFenceRefusal: ON DUPLICATE KEY UPDATE takes no WHERE.
func (reread) UpsertFenceRefusal() string {
	return "its ON DUPLICATE KEY UPDATE takes no WHERE, so the update of an existing row cannot compare fences"
}

// UpdatesIdentity is true.
func (reread) UpdatesIdentity() bool { return true }

// RawLexis: "#" starts a comment, MySQL's executable comments ("/*!...*/")
// are SQL, and a backslash escapes a quote in '...' and "...".
func (reread) RawLexis() sqldriver.Lexis {
	return sqldriver.Lexis{HashComments: true, ExecutableComments: true, BackslashEscapes: true}
}
