package dialects

// SQLite's rows of the capability matrix. SQLite has no row locks, only one
// writer at a time: locking reads are refused unless the application opts
// in to taking the writer lock for them (WriterLock).
var sqliteRows = rows{
	kind: SQLite,
	rules: []rule{
		{feature: CapacityHolds, note: "writer lock taken up front"},
		{feature: LeaseTable},
		{feature: FencedWrite},
		{feature: QueueClaim, note: "1 statement, UPDATE ... RETURNING (SQLite 3.35+)"},
		{feature: WriterLock, note: "opt-in: SQLiteWriterLock()"},
	},
	reasons: map[Feature]string{
		AdvisoryLock:     sqliteNoNamedLocks,
		AdvisoryXactLock: sqliteNoNamedLocks,
	},
}

const sqliteNoNamedLocks = "SQLite has no named locks; use a lease instead (lease.NewLocalStore for processes on one host, " +
	"or the table store of lease/sqlstore), or guard the rows themselves with holds or a lockplugin.Version column"
