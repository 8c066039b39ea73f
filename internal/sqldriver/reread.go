package sqldriver

// Reread phrases what the version guard (internal/version) and fenced
// writes (internal/fence) send or decide differently by database: the
// re-read of a row's version or fence after a write, inside the write's
// transaction; how a guarded batch ends its savepoint, or locks its rows
// first instead; how an upsert's update branch tells an unchanged row or
// takes a fence condition; whether an UPDATE may assign an identity key;
// and how raw SQL sent under a fence is read. Every method is a pure
// function.
//
// The version guard runs on any database GORM speaks, one lockplugin does
// not know included (fenced writes are gated by the capability matrix):
// the unknown database's driver answers with StandardReread, never nil.
type Reread interface {
	// VersionRead is query, the SELECT of a row's version that the version
	// guard sends after a guarded write failed, made to read the latest
	// committed row inside a transaction rather than the transaction's
	// snapshot (which would still show the row as it was before the newer
	// write that made the guard fail).
	VersionRead(query string) string
	// FenceRead is query, the SELECT of the count and greatest fence of the
	// rows a fenced write's conditions match, made to read the latest
	// committed rows inside a transaction.
	FenceRead(query string) string

	// BatchLock is the row lock, with a leading space, that a guarded
	// multi-row statement inside a transaction adds to a read of its rows
	// to lock them first, in place of a savepoint; "" where it opens a
	// savepoint.
	BatchLock() string

	// UpsertUnchanged is how an upsert's update branch tells that a column
	// keeps its value: the null-safe equality operator (with its spaces)
	// between the row's column and the inserted row's value, and how that
	// value is named. NoInsertedRef: it cannot tell (the version is then
	// always bumped).
	UpsertUnchanged() (op string, ref InsertedRef)
	// UpsertFenceRefusal is "" where a fenced upsert's update branch takes
	// "WHERE fence <= mine", else why it cannot compare fences.
	UpsertFenceRefusal() string
	// UpdatesIdentity reports whether an UPDATE may assign an identity
	// (auto-increment) primary key column.
	UpdatesIdentity() bool

	// RawLexis is how the database quotes and comments raw SQL, for the
	// classification of raw statements sent under a fence.
	RawLexis() Lexis
}

// InsertedRef is how an upsert's update branch names the value the insert
// proposed for a column.
type InsertedRef uint8

// The ways of naming an inserted value.
const (
	// NoInsertedRef: the update branch cannot name it (GORM's MERGE).
	NoInsertedRef InsertedRef = iota
	// ExcludedRow: excluded.col (ON CONFLICT ... DO UPDATE).
	ExcludedRow
	// ValuesFunc: VALUES(col) (ON DUPLICATE KEY UPDATE).
	ValuesFunc
)

// Lexis is what a raw statement's reader must know of a database's quotes
// and comments. The zero Lexis is standard SQL's: "--" and "/* */"
// comments, '...' strings and "..." identifiers with doubled quotes.
type Lexis struct {
	// HashComments: "#" starts a comment to the end of the line.
	HashComments bool
	// ExecutableComments: "/*!...*/" is SQL the server runs.
	ExecutableComments bool
	// BackslashEscapes: a backslash escapes a quote in '...' and "...".
	BackslashEscapes bool
	// EscapeStrings: E'...' strings take backslash escapes.
	EscapeStrings bool
	// DollarQuotes: $$...$$ and $tag$...$tag$ are strings.
	DollarQuotes bool
	// BracketIdents: [name] is a quoted identifier.
	BracketIdents bool
}

// StandardReread is the Reread of a database lockplugin does not know:
// plain reads, no upsert comparison, standard SQL's
// lexis.
type StandardReread struct{}

// VersionRead is query.
func (StandardReread) VersionRead(query string) string { return query }

// FenceRead is query.
func (StandardReread) FenceRead(query string) string { return query }

// BatchLock is "": a savepoint.
func (StandardReread) BatchLock() string { return "" }

// UpsertUnchanged is NoInsertedRef.
func (StandardReread) UpsertUnchanged() (string, InsertedRef) { return "", NoInsertedRef }

// UpsertFenceRefusal says lockplugin does not know how.
func (StandardReread) UpsertFenceRefusal() string {
	return "lockplugin does not know how to put a condition on its upsert's update"
}

// UpdatesIdentity is true.
func (StandardReread) UpdatesIdentity() bool { return true }

// RawLexis is the zero Lexis.
func (StandardReread) RawLexis() Lexis { return Lexis{} }
