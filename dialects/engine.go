package dialects

import (
	"context"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
)

// Engine names a database product that speaks another's wire protocol and
// SQL (Kind), behind that product's GORM dialector, but does not behave like
// it: TiDB behind the MySQL dialector, CockroachDB and YugabyteDB behind the
// PostgreSQL one. Statements are phrased by Kind; what is allowed is decided
// by the engine's own rows of the capability matrix, which start empty: a
// feature an engine's rows do not name is refused with ErrUnsupported, so
// a new look-alike is never trusted with its protocol's rows.
type Engine string

// The engines lockplugin tells apart from their protocol's database.
const (
	// NoEngine: the database is the product its Kind names.
	NoEngine Engine = ""
	// TiDB reports VERSION() as "8.0.11-TiDB-v8.4.0".
	TiDB Engine = "tidb"
	// CockroachDB reports version() as "CockroachDB CCL v23.2.0 (...)".
	CockroachDB Engine = "cockroachdb"
	// YugabyteDB reports version() as "PostgreSQL 11.2-YB-2.20.0.0-b0 ...".
	YugabyteDB Engine = "yugabytedb"
)

var (
	tidbVersion  = regexp.MustCompile(`(?i)-TiDB-v?(\d+(?:\.\d+){0,2})`)
	crdbVersion  = regexp.MustCompile(`(?i)CockroachDB\s+(?:CCL|OSS)?\s*v?(\d+(?:\.\d+){0,2})`)
	yugaVersion  = regexp.MustCompile(`(?i)-YB-(\d+(?:\.\d+){0,3})`)
	engineLabels = map[Engine]string{TiDB: "TiDB", CockroachDB: "CockroachDB", YugabyteDB: "YugabyteDB"}
)

// engineOf reads the engine and the engine's own version from a server
// version string; version numbers outside it (TiDB's "8.0.11", YugabyteDB's
// "11.2") are the protocol's.
func engineOf(version string) (Engine, string) {
	if m := tidbVersion.FindStringSubmatch(version); m != nil {
		return TiDB, m[1]
	}
	if m := crdbVersion.FindStringSubmatch(version); m != nil {
		return CockroachDB, m[1]
	}
	if strings.Contains(strings.ToLower(version), "cockroachdb") {
		return CockroachDB, ""
	}
	if m := yugaVersion.FindStringSubmatch(version); m != nil {
		return YugabyteDB, m[1]
	}
	return NoEngine, ""
}

// A server is what lockplugin learnt by asking one connection pool's server
// for its version: the PostgreSQL dialector reports none, and the MySQL one
// none when SkipInitializeWithVersion is set, yet TiDB, CockroachDB and
// YugabyteDB must be told apart before anything is sent.
type server struct {
	mu       sync.Mutex
	known    bool
	version  string
	failedAt time.Time // the last failed ask, retried after retryAsk
}

// retryAsk spaces the asks of a server that did not answer, so that a
// database that is down is not asked again on every statement.
const retryAsk = time.Second

// servers holds one *server per dialector: gorm.Open makes one dialector
// per connection pool, and every session, transaction and WithContext of
// that *gorm.DB shares it. Forget drops an entry.
var servers sync.Map // gorm.Dialector (a pointer) -> *server

// askTimeout bounds the one version query per pool.
const askTimeout = 5 * time.Second

// asksServer reports whether the dialector leaves the engine unsaid, so
// that the server must be asked.
func asksServer(dl Dialect) bool {
	switch dl.Kind {
	case Postgres:
		return dl.Version == ""
	case MySQL:
		return dl.Version == ""
	}
	return false
}

// serverVersionOf returns the version the server behind db reported, asking
// it once per dialector (connection pool) on first use. A DryRun session,
// a dialector that is not a pointer, or a query that fails yields "" and
// nothing is remembered, so the next call asks again.
func serverVersionOf(db *gorm.DB) string {
	key, ok := serverKey(db.Dialector)
	if !ok {
		return ""
	}
	v, _ := servers.LoadOrStore(key, &server{})
	s := v.(*server)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known {
		return s.version
	}
	if db.DryRun || (!s.failedAt.IsZero() && time.Since(s.failedAt) < retryAsk) {
		return ""
	}
	pool := db.ConnPool
	if db.Statement != nil && db.Statement.ConnPool != nil {
		// Inside a transaction, its own connection: a pool of one
		// connection held by the transaction would otherwise wait.
		pool = db.Statement.ConnPool
	}
	if pool == nil {
		return ""
	}
	ctx := context.Background()
	if db.Statement != nil && db.Statement.Context != nil {
		ctx = context.WithoutCancel(db.Statement.Context)
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	var version string
	q := "SELECT version()"
	if FromDialector(db.Dialector).Kind == MySQL {
		q = "SELECT VERSION()"
	}
	if err := pool.QueryRowContext(ctx, q).Scan(&version); err != nil {
		s.failedAt = time.Now()
		return ""
	}
	s.known, s.version = true, version
	return version
}

func serverKey(d gorm.Dialector) (gorm.Dialector, bool) {
	if d == nil || reflect.TypeOf(d).Kind() != reflect.Pointer {
		return nil, false
	}
	return d, true
}

// AssumeServerVersion records version as what the server behind db reports,
// as if it had been asked: for DryRun sessions and tests that describe a
// CockroachDB or YugabyteDB without one. It applies to every session of db's
// connection pool until Forget.
func AssumeServerVersion(db *gorm.DB, version string) {
	key, ok := serverKey(db.Dialector)
	if !ok {
		return
	}
	servers.Store(key, &server{known: true, version: version})
}

// Forget drops what was learnt from the server behind db, so that the next
// use asks again.
func Forget(db *gorm.DB) {
	if key, ok := serverKey(db.Dialector); ok {
		servers.Delete(key)
	}
}
