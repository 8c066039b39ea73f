// Package testdb opens every database the conformance suites run against.
//
// SQLite always runs, on a WAL file in a temporary directory. PostgreSQL,
// MySQL/MariaDB and SQL Server come from the environment (DSNs below, with
// defaults that match the CI machine); where the default server does not
// answer and a Docker engine does, the database is started with dockertest.
// With CI set, a missing PostgreSQL, MySQL/MariaDB or Redis fails the test:
// it never skips quietly.
//
//	LOCKPLUGIN_POSTGRES_DSN  host=127.0.0.1 user=postgres dbname=test sslmode=disable
//	LOCKPLUGIN_MYSQL_DSN     root:@tcp(127.0.0.1:3306)/test?parseTime=true
//	LOCKPLUGIN_REDIS_ADDR    127.0.0.1:6379
//	LOCKPLUGIN_SQLSERVER_DSN (unset: SQL Server tests skip with a message)
//	LOCKPLUGIN_TIDB_DSN      root:@tcp(127.0.0.1:4000)/test?parseTime=true
//
// TiDB is one more MySQL-protocol target, started by .ci/run from a
// tidb-server built from the Go module proxy; with CI set a TiDB that does
// not answer fails the test, as PostgreSQL and MariaDB do.
//
// Every test package shares these databases with the others, which `go test
// ./...` runs in parallel: a package names its tables, advisory locks and
// Redis keys with its own prefix.
package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/lockplugin/lockplugin/internal/bounded"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
)

// Database names, as used by Get and as subtest names.
const (
	SQLite    = "sqlite"
	Postgres  = "postgres"
	MySQL     = "mysql" // MySQL or MariaDB; Target.Name says which
	SQLServer = "sqlserver"
	TiDB      = "tidb" // TiDB behind the MySQL dialector
)

// Default DSNs, matching the CI machine.
const (
	DefaultPostgresDSN = "host=127.0.0.1 user=postgres dbname=test sslmode=disable"
	DefaultMySQLDSN    = "root:@tcp(127.0.0.1:3306)/test?parseTime=true"
	DefaultRedisAddr   = "127.0.0.1:6379"
	DefaultTiDBDSN     = "root:@tcp(127.0.0.1:4000)/test?parseTime=true"
)

// Target is one open database.
type Target struct {
	// Name is "sqlite", "postgres", "mysql", "mariadb", "tidb" or "sqlserver".
	Name string
	// Dialect is what dialects.Of reports for DB.
	Dialect dialects.Dialect
	// DB has lockplugin registered.
	DB *gorm.DB
	// Plain is plain GORM over the same connection pool, without lockplugin:
	// the unprotected baseline.
	Plain *gorm.DB
	// SQL is the shared connection pool.
	SQL *sql.DB
	// DSN is the data source name the pool was opened with.
	DSN string

	kind string
}

// CI reports whether the tests run under CI, where missing servers fail.
func CI() bool { return os.Getenv("CI") != "" }

var (
	mu      sync.Mutex
	opened  = map[string]*Target{}
	failed  = map[string]string{}
	tempDir string
)

// Each runs fn as a subtest on every reachable database: SQLite, PostgreSQL,
// MySQL/MariaDB, TiDB, and SQL Server when its DSN is set.
func Each(t *testing.T, fn func(t *testing.T, tg *Target)) {
	t.Helper()
	for _, kind := range []string{SQLite, Postgres, MySQL, TiDB, SQLServer} {
		t.Run(kind, func(t *testing.T) {
			tg := Get(t, kind)
			fn(t, tg)
		})
	}
}

// Get returns the shared Target for one database kind (SQLite, Postgres,
// MySQL, SQLServer). When the database cannot be reached it skips the test,
// or fails it under CI for PostgreSQL and MySQL/MariaDB; SQLite, which needs
// no server, always fails.
func Get(t testing.TB, kind string) *Target {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if tg, ok := opened[kind]; ok {
		return tg
	}
	if why, ok := failed[kind]; ok {
		unavailable(t, kind, why)
		return nil
	}
	dsn, why := dsnFor(kind)
	if dsn == "" {
		failed[kind] = why
		unavailable(t, kind, why)
		return nil
	}
	tg, err := open(kind, dsn)
	if err != nil && kind != SQLite && kind != SQLServer && kind != TiDB && os.Getenv(envFor(kind)) == "" {
		// The default server does not answer; try Docker.
		if dsn2, derr := startContainer(kind); derr == nil {
			tg, err = open(kind, dsn2)
		} else {
			err = fmt.Errorf("%w; and no container could be started: %v", err, derr)
		}
	}
	if err != nil {
		failed[kind] = err.Error()
		unavailable(t, kind, err.Error())
		return nil
	}
	opened[kind] = tg
	return tg
}

// Open opens a new, separate Target for kind with the DSN changed by edit
// (nil leaves it alone), closed when the test ends. Tests that change
// connection settings or kill connections use it instead of the shared one.
func Open(t testing.TB, kind string, edit func(dsn string) string) *Target {
	t.Helper()
	shared := Get(t, kind)
	dsn := shared.DSN
	if edit != nil {
		dsn = edit(dsn)
	}
	tg, err := open(kind, dsn)
	if err != nil {
		t.Fatalf("testdb: reopening %s: %v", kind, err)
	}
	t.Cleanup(func() { _ = tg.SQL.Close() })
	return tg
}

func unavailable(t testing.TB, kind, why string) {
	t.Helper()
	if kind == SQLite {
		// SQLite needs no server: failing to open it is a broken harness.
		t.Fatalf("testdb: cannot open SQLite: %s", why)
	}
	if CI() && (kind == Postgres || kind == MySQL || kind == TiDB) {
		t.Fatalf("testdb: %s is required under CI and is not reachable: %s", kind, why)
	}
	t.Skipf("testdb: %s not reachable, skipping: %s", kind, why)
}

func envFor(kind string) string {
	switch kind {
	case Postgres:
		return "LOCKPLUGIN_POSTGRES_DSN"
	case MySQL:
		return "LOCKPLUGIN_MYSQL_DSN"
	case SQLServer:
		return "LOCKPLUGIN_SQLSERVER_DSN"
	case TiDB:
		return "LOCKPLUGIN_TIDB_DSN"
	}
	return ""
}

func dsnFor(kind string) (string, string) {
	switch kind {
	case SQLite:
		if tempDir == "" {
			removeStaleTempDirs()
			dir, err := os.MkdirTemp("", sqliteTempPrefix)
			if err != nil {
				return "", err.Error()
			}
			tempDir = dir
		}
		return SQLiteDSN(filepath.Join(tempDir, "test.db")), ""
	case Postgres:
		return envOr("LOCKPLUGIN_POSTGRES_DSN", DefaultPostgresDSN), ""
	case MySQL:
		return envOr("LOCKPLUGIN_MYSQL_DSN", DefaultMySQLDSN), ""
	case TiDB:
		return envOr("LOCKPLUGIN_TIDB_DSN", DefaultTiDBDSN), ""
	case SQLServer:
		if v := os.Getenv("LOCKPLUGIN_SQLSERVER_DSN"); v != "" {
			return v, ""
		}
		return "", "LOCKPLUGIN_SQLSERVER_DSN is not set (docker compose up sqlserver, then set it)"
	}
	return "", "unknown database " + kind
}

// sqliteTempPrefix names the directories of the test SQLite files. A test
// binary cannot know when the last test using its shared file has ended, so
// instead of removing its own directory at exit it removes, at start, those
// that earlier runs left more than an hour ago.
const sqliteTempPrefix = "lockplugin-sqlite-"

func removeStaleTempDirs() {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), sqliteTempPrefix+"*"))
	for _, dir := range old {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && time.Since(fi.ModTime()) > time.Hour {
			_ = os.RemoveAll(dir)
		}
	}
}

// SQLiteDSN returns the DSN lockplugin recommends for SQLite under
// concurrency: WAL journal, a busy timeout, and immediate transactions so
// that a transaction takes the writer lock when it begins.
func SQLiteDSN(path string) string {
	return "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(20000)&_pragma=foreign_keys(1)&_txlock=immediate"
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Dialector returns the GORM dialector for kind over dsn.
func Dialector(kind, dsn string) gorm.Dialector {
	switch kind {
	case Postgres:
		return postgres.Open(dsn)
	case MySQL, TiDB:
		return mysql.Open(dsn)
	case SQLServer:
		return sqlserver.Open(dsn)
	default:
		return sqlite.Open(dsn)
	}
}

func gormConfig() *gorm.Config {
	lg := logger.Discard
	if os.Getenv("LOCKPLUGIN_LOG") != "" {
		lg = logger.Default.LogMode(logger.Info)
	}
	return &gorm.Config{Logger: lg}
}

// openTimeout bounds open as a whole: connecting, TLS, the handshake and
// the first queries. GORM's MySQL dialector asks SELECT VERSION() inside
// gorm.Open with no context, so a server that accepts the connection and
// never answers would otherwise hang the suite there.
const openTimeout = 15 * time.Second

// open is openUnbounded within openTimeout. When the time runs out, the
// open is left to finish or fail on its own, and closes what it opened.
func open(kind, dsn string) (*Target, error) {
	tg, ok, err := bounded.Within(openTimeout, func() (*Target, error) { return openUnbounded(kind, dsn) },
		func(tg *Target, _ error) {
			if tg != nil {
				tg.closeAll()
			}
		})
	if !ok {
		return nil, fmt.Errorf("testdb: %s did not finish connecting, its handshake or its first query in %v: a server that accepts connections but does not answer", kind, openTimeout)
	}
	return tg, err
}

func openUnbounded(kind, dsn string) (*Target, error) {
	db, err := gorm.Open(Dialector(kind, dsn), gormConfig())
	if err != nil {
		return nil, fmt.Errorf("testdb: opening %s: %w", kind, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("testdb: %s does not answer: %w", kind, err)
	}
	sqlDB.SetMaxOpenConns(32)
	sqlDB.SetMaxIdleConns(32)
	plain, err := gorm.Open(Dialector(kind, dsn), gormConfig())
	if err != nil {
		return nil, err
	}
	// Plain shares nothing with DB but the server, so a plugin registered on
	// DB never reaches it.
	plainSQL, _ := plain.DB()
	plainSQL.SetMaxOpenConns(32)
	plainSQL.SetMaxIdleConns(32)
	if err := db.Use(lockplugin.New()); err != nil {
		return nil, err
	}
	tg := &Target{Name: kind, Dialect: dialects.Of(db), DB: db, Plain: plain, SQL: sqlDB, DSN: dsn, kind: kind}
	if tg.Dialect.Kind == dialects.MariaDB {
		tg.Name = "mariadb"
	}
	if kind == TiDB && tg.Dialect.Engine != dialects.TiDB {
		_ = sqlDB.Close()
		_ = plainSQL.Close()
		return nil, fmt.Errorf("testdb: LOCKPLUGIN_TIDB_DSN reaches %s, not TiDB", tg.Dialect)
	}
	return tg, nil
}

// closeAll closes both pools of tg.
func (tg *Target) closeAll() {
	_ = tg.SQL.Close()
	if tg.Plain != nil {
		if plainSQL, err := tg.Plain.DB(); err == nil {
			_ = plainSQL.Close()
		}
	}
}

// Kind returns the kind Get was called with (SQLite, Postgres, MySQL or
// SQLServer), which Open takes.
func (tg *Target) Kind() string { return tg.kind }

// Is reports whether the target is one of the given dialect kinds.
func (tg *Target) Is(kinds ...dialects.Kind) bool {
	for _, k := range kinds {
		if tg.Dialect.Kind == k {
			return true
		}
	}
	return false
}

// Reset drops the given tables (if they exist) and migrates the models, so
// a test starts from empty tables.
func (tg *Target) Reset(t testing.TB, models ...any) {
	t.Helper()
	m := tg.DB.Migrator()
	for _, model := range models {
		if m.HasTable(model) {
			if err := m.DropTable(model); err != nil {
				t.Fatalf("testdb: dropping table for %T on %s: %v", model, tg.Name, err)
			}
		}
	}
	if err := tg.DB.AutoMigrate(models...); err != nil {
		t.Fatalf("testdb: migrating on %s: %v", tg.Name, err)
	}
}

// Unique returns a name unique to this test run, for lock names and keys:
// prefix, test name and a timestamp.
func Unique(t testing.TB, prefix string) string {
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	return fmt.Sprintf("%s-%s-%d", prefix, name, time.Now().UnixNano())
}
