package sqldriver

// Holds phrases package holds' statements over the holds table: the parts
// of them that differ by database. Package holds assembles the statements
// (the algorithm and the columns are its own) and asks its database's
// Holds for these parts, once per holds table; every method is a pure
// function of its arguments and the driver's phrasing.
//
// Bind parameters: a statement here writes ? for each, in the order of its
// arguments, and package holds renders them with the driver's BindVar ($1
// on PostgreSQL, @p1 on SQL Server, ? elsewhere). A numbered ?n (SQLite's
// Arg) is left as it is. Grant alone is written with its final
// placeholders, since its arguments repeat.
//
// A nil Holds means the database cannot run holds; the capability gate
// (dialects.CapacityHolds) has refused it before any is asked.
type Holds interface {
	// Arg is the placeholder of the n-th argument (from 1) of a statement
	// that ActiveOf may make repeat its arguments: ? where ActiveOf names
	// each argument once (bound in order afterwards), ?n where it repeats
	// them.
	Arg(n int) string
	// Clock is the database clock (NowMillis) as a value fixed once per
	// statement, which an index range over expires_at can compare against.
	Clock() string
	// ActiveOf is the condition for the active holds (not released, not
	// expired by Clock) of one resource, whose type and id are the
	// placeholders rt and rid, written so that the index (resource_type,
	// resource_id, released_at, expires_at) reads only the active holds.
	ActiveOf(t HoldsTable, rt, rid string) string
	// HolderIs is the condition "holder equals the placeholder p", byte for
	// byte ("alice" and "alice " are two holders).
	HolderIs(p string) string
	// LockResource returns the statements that lock a resource's row and
	// read it back, each with the key as its one argument: lock is "" where
	// the read itself locks. table and key are quoted.
	LockResource(table, key string) (lock, read string)

	// Isolation is the query that reads the isolation level of the
	// transaction it runs in, where a caller's transaction could read a
	// snapshot older than the resource row's lock; "" where Acquire needs
	// no check.
	Isolation() string
	// SnapshotIsolation reports whether a level, as Isolation's query
	// answered it, reads one snapshot for the whole transaction (Acquire
	// refuses to run in it).
	SnapshotIsolation(level string) bool
	// IsolationName names a level, as Isolation's query answered it, in
	// the error that refuses it.
	IsolationName(level string) string
	// OwnReadCommitted reports whether Acquire's own transactions must ask
	// for READ COMMITTED, whatever the session's default.
	OwnReadCommitted() bool

	// Grant is a count-and-insert in one statement, run once the resource
	// row is locked (see package holds' grant), with its final
	// placeholders: resource type, resource id, holder, TTL in ms (NULL
	// for none), capacity. "" where Acquire counts, then inserts.
	Grant(t HoldsTable) string
	// Insert adds a hold. Arguments: resource type, resource id, holder,
	// created_at, expires_at. answersRow: the statement answers the new id
	// as a row; otherwise the id is the result's LastInsertId.
	Insert(t HoldsTable) (query string, answersRow bool)
	// ReleaseReturning is an UPDATE of the holds WHERE where that sets
	// released_at to the clock and answers the time it set, in the same
	// statement, where the database can; "" elsewhere.
	ReleaseReturning(t HoldsTable, where string) string

	// CreateTable is the DDL that creates the holds table and the index
	// the count walks, each statement safe to run again.
	CreateTable(t HoldsTable) []string
	// MigrateLock is the statement that serialises concurrent Migrate
	// calls inside their transactions, "" where the database needs none.
	// Argument: MigrateKey.
	MigrateLock() string
	// MigrateKey is MigrateLock's argument for the lock named name.
	MigrateKey(name string) any
	// Purge deletes up to limit holds that satisfy endedBefore (a
	// condition with two placeholders, both the age), oldest ids first.
	// repeats: the condition appears twice, so the age is bound four
	// times.
	Purge(t HoldsTable, endedBefore string, limit int) (query string, repeats bool)
}

// HoldsTable is the holds table as its statements name it.
type HoldsTable struct {
	Name   string // as configured: "holds", or "billing.holds"
	Schema string // Name's schema, "" without one
	Bare   string // Name without its schema
	Quoted string // Name quoted part by part (QuoteTable)
}
