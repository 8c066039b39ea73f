package dialects

import "fmt"

// Feature names one thing a database may or may not be able to do. Feature
// values appear in error messages, so they read as SQL or as a mechanism.
type Feature string

// Row-lock features.
const (
	ForUpdate      Feature = "FOR UPDATE"
	ForShare       Feature = "FOR SHARE"
	ForNoKeyUpdate Feature = "FOR NO KEY UPDATE"
	ForKeyShare    Feature = "FOR KEY SHARE"
	NoWait         Feature = "NOWAIT"
	SkipLocked     Feature = "SKIP LOCKED"
	LockOf         Feature = "FOR UPDATE OF"
)

// Mechanism features.
const (
	// AdvisoryLock is a session-scoped named lock held by the database.
	AdvisoryLock Feature = "advisory lock"
	// AdvisoryXactLock is a transaction-scoped named lock.
	AdvisoryXactLock Feature = "transaction-scoped advisory lock"
	// CapacityHolds is the holds package's lock-count-insert transaction.
	CapacityHolds Feature = "capacity holds"
	// LeaseTable is the lease table store (lease/sqlstore).
	LeaseTable Feature = "lease table store"
	// QueueClaim is lockplugin.Claim: claim rows of a work queue, each for
	// exactly one caller, in as few round trips as the database allows.
	QueueClaim Feature = "queue claim"
	// WriterLock stands in for row locks on a database that has none but
	// one writer at a time (SQLite): a locking read first takes the
	// writer lock. Opt-in, with lockplugin.SQLiteWriterLock.
	WriterLock Feature = "writer lock for row locks"
	// FencedWrite is a write guarded by a lease's fencing token
	// (lockplugin.WithFence): "fence <= mine" added to its WHERE, and a
	// write it stopped reported as ErrStaleFence.
	FencedWrite Feature = "fenced write"
)

// rule decides one feature for one database. A rule whose since is non-nil
// applies only from that server version on; an unknown server version never
// satisfies it. A rule's note says how the database does it, or a caveat;
// the documentation's matrices show it.
type rule struct {
	feature Feature
	since   *[3]int
	note    string
}

func from(major, minor, patch int) *[3]int { return &[3]int{major, minor, patch} }

// rows is one database's part of the capability matrix, declared in that
// database's own file (postgres.go, mysql.go, mariadb.go, sqlserver.go,
// oracle.go, sqlite.go, tidb.go, cockroachdb.go, yugabytedb.go).
type rows struct {
	kind   Kind
	engine Engine // the look-alike these rows are for; NoEngine for Kind itself
	rules  []rule
	// reasons says why the database lacks a feature its rules leave out,
	// where the feature's name alone would not tell a user what to do
	// instead. An engine's refusal without a reason here says that
	// lockplugin has not verified the feature there.
	reasons map[Feature]string
}

// matrix is the capability matrix: the one place that says what each
// database can do, one entry per database. A (database, feature) pair
// without a rule is unsupported, and an engine never inherits its Kind's
// rows: a database missing here is refused everything. The documentation's
// tables are generated from it (see MechanismMatrix) and a test in tests/
// fails when they drift apart.
var matrix = []rows{
	postgresRows,
	mysqlRows,
	mariadbRows,
	sqlserverRows,
	oracleRows,
	sqliteRows,
	tidbRows,
	cockroachdbRows,
	yugabytedbRows,
}

// Supports reports whether the database can do f. Version-dependent
// features are decided from the server version the dialector reported; an
// unreported version supports none of them.
func (d Dialect) Supports(f Feature) bool {
	r, ok := d.rule(f)
	if !ok {
		return false
	}
	return r.since == nil || d.AtLeast(r.since[0], r.since[1], r.since[2])
}

// Note is the capability matrix's remark on f for this database: how the
// database does it ("`SET LOCAL lock_timeout`, restored after") or a
// caveat ("SQL checked, not run live"); "" when there is none or the
// database does not support f.
func (d Dialect) Note(f Feature) string {
	if !d.Supports(f) {
		return ""
	}
	r, _ := d.rule(f)
	return r.note
}

func (d Dialect) rule(f Feature) (rule, bool) {
	r, ok := ruleIndex[ruleKey{d.Kind, d.Engine, f}]
	return r, ok
}

// ruleKey finds an engine's rows apart from its protocol's: an engine never
// inherits a row of its Kind.
type ruleKey struct {
	kind    Kind
	engine  Engine
	feature Feature
}

// dbKey names one database of the matrix.
type dbKey struct {
	kind   Kind
	engine Engine
}

// ruleIndex is the matrix's rules keyed for lookup: lock checks run on
// every locking query, and a scan of the whole matrix each time showed in
// the render cost. reasonIndex is its reasons, by database.
var ruleIndex, reasonIndex = func() (map[ruleKey]rule, map[dbKey]map[Feature]string) {
	rules := map[ruleKey]rule{}
	reasons := make(map[dbKey]map[Feature]string, len(matrix))
	for _, db := range matrix {
		for _, r := range db.rules {
			rules[ruleKey{db.kind, db.engine, r.feature}] = r
		}
		reasons[dbKey{db.kind, db.engine}] = db.reasons
	}
	return rules, reasons
}()

// reason is the database's own reason for lacking f; "" when it has none.
func (d Dialect) reason(f Feature) string { return reasonIndex[dbKey{d.Kind, d.Engine}][f] }

// Require returns nil when the database supports f, and otherwise an
// *UnsupportedError naming the database and the feature, and saying why
// when the answer depends on a version.
func (d Dialect) Require(f Feature) error {
	if d.Supports(f) {
		return nil
	}
	e := &UnsupportedError{Dialect: d.String(), Feature: string(f)}
	if r, ok := d.rule(f); ok && r.since != nil {
		if d.VersionKnown() {
			e.Reason = fmt.Sprintf("needs %s %d.%d.%d or later", kindLabel(d.Kind), r.since[0], r.since[1], r.since[2])
		} else {
			e.Reason = fmt.Sprintf("needs %s %d.%d.%d or later, and the dialector did not report the server version", kindLabel(d.Kind), r.since[0], r.since[1], r.since[2])
		}
	}
	if d.Engine != NoEngine && !ok(d, f) {
		e.Reason = engineReason(d, f)
	}
	if d.Kind == Unknown {
		e.Reason = "lockplugin does not know this dialect, and will not guess its syntax"
	}
	if e.Reason == "" {
		e.Reason = instead(d, f) // instead.go
	}
	return e
}

func ok(d Dialect, f Feature) bool { _, found := d.rule(f); return found }

func kindLabel(k Kind) string { return Dialect{Kind: k}.String() }

// engineReason says why an engine's rows leave f out.
func engineReason(d Dialect, f Feature) string {
	if why := d.reason(f); why != "" {
		return why
	}
	return "lockplugin has not verified it on " + engineLabels[d.Engine] + ", and will not assume that " + kindLabel(d.Kind) + "'s behaviour holds there"
}
