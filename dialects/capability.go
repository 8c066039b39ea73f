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

// rule decides one feature for one database kind. A rule whose since is
// non-nil applies only from that server version on; an unknown server
// version never satisfies it.
type rule struct {
	kind    Kind
	engine  Engine // the look-alike this row is for; NoEngine for Kind itself
	feature Feature
	since   *[3]int
	note    string
}

func from(major, minor, patch int) *[3]int { return &[3]int{major, minor, patch} }

// rules is the capability matrix: the one place that says what each
// database can do. A (kind, feature) pair without a rule is unsupported.
// README.md's tables are generated from it (see Matrix) and a test in
// tests/ fails when they drift apart.
var rules = []rule{
	{kind: Postgres, feature: ForUpdate},
	{kind: Postgres, feature: ForShare},
	{kind: Postgres, feature: ForNoKeyUpdate},
	{kind: Postgres, feature: ForKeyShare},
	{kind: Postgres, feature: NoWait},
	{kind: Postgres, feature: SkipLocked},
	{kind: Postgres, feature: LockOf},
	{kind: Postgres, feature: LockWait, note: "`SET LOCAL lock_timeout`, restored after"},
	{kind: Postgres, feature: AdvisoryLock},
	{kind: Postgres, feature: AdvisoryXactLock},
	{kind: Postgres, feature: CapacityHolds},
	{kind: Postgres, feature: LeaseTable},
	{kind: Postgres, feature: FencedWrite},
	{kind: Postgres, feature: QueueClaim, note: "1 statement, UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING"},

	{kind: MySQL, feature: ForUpdate},
	{kind: MySQL, feature: ForShare, note: "LOCK IN SHARE MODE before 8.0.1"},
	{kind: MySQL, feature: NoWait, since: from(8, 0, 1)},
	{kind: MySQL, feature: SkipLocked, since: from(8, 0, 1)},
	{kind: MySQL, feature: LockOf, since: from(8, 0, 1)},
	{kind: MySQL, feature: LockWait, note: "`SET SESSION innodb_lock_wait_timeout, lock_wait_timeout`, restored after"},
	{kind: MySQL, feature: AdvisoryLock},
	{kind: MySQL, feature: CapacityHolds},
	{kind: MySQL, feature: LeaseTable},
	{kind: MySQL, feature: FencedWrite},
	{kind: MySQL, feature: QueueClaim, since: from(8, 0, 1), note: "SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE, in a transaction"},

	{kind: MariaDB, feature: ForUpdate},
	{kind: MariaDB, feature: ForShare, note: "LOCK IN SHARE MODE"},
	{kind: MariaDB, feature: NoWait, since: from(10, 3, 0)},
	{kind: MariaDB, feature: SkipLocked, since: from(10, 6, 0)},
	{kind: MariaDB, feature: LockWait, since: from(10, 3, 0), note: "`WAIT n` (seconds, rounded up)"},
	{kind: MariaDB, feature: AdvisoryLock},
	{kind: MariaDB, feature: CapacityHolds},
	{kind: MariaDB, feature: LeaseTable},
	{kind: MariaDB, feature: FencedWrite},
	{kind: MariaDB, feature: QueueClaim, since: from(10, 6, 0), note: "SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE, in a transaction"},

	{kind: SQLServer, feature: ForUpdate, note: "WITH (XLOCK, ROWLOCK)"},
	{kind: SQLServer, feature: ForShare, note: "WITH (REPEATABLEREAD, ROWLOCK)"},
	{kind: SQLServer, feature: NoWait, note: "NOWAIT table hint"},
	{kind: SQLServer, feature: SkipLocked, note: "READPAST table hint"},
	{kind: SQLServer, feature: LockOf, note: "hints only on the named tables"},
	{kind: SQLServer, feature: LockWait, note: "`SET LOCK_TIMEOUT`, restored after"},
	{kind: SQLServer, feature: AdvisoryLock},
	{kind: SQLServer, feature: AdvisoryXactLock},
	{kind: SQLServer, feature: CapacityHolds},
	{kind: SQLServer, feature: LeaseTable},
	{kind: SQLServer, feature: FencedWrite},
	{kind: SQLServer, feature: QueueClaim, note: "1 statement, UPDATE TOP (n) ... WITH (UPDLOCK, READPAST, ROWLOCK) OUTPUT"},

	{kind: Oracle, feature: ForUpdate},
	{kind: Oracle, feature: NoWait},
	{kind: Oracle, feature: SkipLocked},
	{kind: Oracle, feature: LockWait, note: "`WAIT n` (seconds, rounded up)"},
	{kind: Oracle, feature: AdvisoryLock, note: "needs EXECUTE on DBMS_LOCK"},
	{kind: Oracle, feature: LeaseTable, note: "SQL checked, not run live"},
	{kind: Oracle, feature: FencedWrite, note: "SQL checked, not run live"},
	{kind: Oracle, feature: QueueClaim, note: "SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE; SQL checked, not run live"},

	{kind: SQLite, feature: CapacityHolds, note: "writer lock taken up front"},
	{kind: SQLite, feature: LeaseTable},
	{kind: SQLite, feature: FencedWrite},
	{kind: SQLite, feature: QueueClaim, note: "1 statement, UPDATE ... RETURNING (SQLite 3.35+)"},
	{kind: SQLite, feature: WriterLock, note: "opt-in: SQLiteWriterLock()"},
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

// ruleIndex is rules keyed for lookup: lock checks run on every locking
// query, and a scan of the whole matrix each time showed in the render cost.
var ruleIndex = func() map[ruleKey]rule {
	all := append(append(append([]rule(nil), rules...), tidbRules...), lookalikeRules...)
	m := make(map[ruleKey]rule, len(all))
	for _, r := range all {
		m[ruleKey{r.kind, r.engine, r.feature}] = r
	}
	return m
}()

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
