// Package testdb opens the servers lockcheck's own tests run against: the
// same environment variables and defaults as the conformance suites'
// tests/internal/testdb (which this module cannot import), without the
// Docker fallback, so that the lockcheck module needs nothing beyond what
// the command itself uses.
//
//	LOCKPLUGIN_POSTGRES_DSN  host=127.0.0.1 user=postgres dbname=test sslmode=disable
//	LOCKPLUGIN_MYSQL_DSN     root:@tcp(127.0.0.1:3306)/test?parseTime=true
//	LOCKPLUGIN_REDIS_ADDR    127.0.0.1:6379
//	LOCKPLUGIN_TIDB_DSN      root:@tcp(127.0.0.1:4000)/test?parseTime=true
//	LOCKPLUGIN_SQLSERVER_DSN (unset: SQL Server tests skip with a message)
//
// With CI set, a PostgreSQL, MySQL/MariaDB, TiDB or Redis that does not
// answer fails the test; without it the test is skipped with the reason.
package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/lockplugin/lockplugin/internal/bounded"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
)

// Database kinds, as Get takes them.
const (
	Postgres  = "postgres"
	MySQL     = "mysql" // MySQL or MariaDB; Target.Name says which
	TiDB      = "tidb"  // TiDB behind the MySQL dialector
	SQLServer = "sqlserver"
)

// Default DSNs and address, matching the CI machine.
const (
	DefaultPostgresDSN = "host=127.0.0.1 user=postgres dbname=test sslmode=disable"
	DefaultMySQLDSN    = "root:@tcp(127.0.0.1:3306)/test?parseTime=true"
	DefaultTiDBDSN     = "root:@tcp(127.0.0.1:4000)/test?parseTime=true"
	DefaultRedisAddr   = "127.0.0.1:6379"
)

// Target is one open database.
type Target struct {
	// Name is "postgres", "mysql", "mariadb", "tidb" or "sqlserver".
	Name string
	// Dialect is what dialects.Of reports for DB.
	Dialect dialects.Dialect
	// DB has lockplugin registered.
	DB *gorm.DB
	// SQL is DB's connection pool.
	SQL *sql.DB
	// DSN is the data source name the pool was opened with.
	DSN string
}

// CI reports whether the tests run under CI, where missing servers fail.
func CI() bool { return os.Getenv("CI") != "" }

var (
	mu     sync.Mutex
	opened = map[string]*Target{}
	failed = map[string]string{}
)

// Get returns the shared Target for kind, opened once per test binary. A
// server that does not answer skips the test, or fails it under CI.
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
	dsn, err := dsnFor(kind)
	var tg *Target
	if err == nil {
		tg, err = open(kind, dsn)
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
// (nil leaves it alone), closed when the test ends.
func Open(t testing.TB, kind string, edit func(dsn string) string) *Target {
	t.Helper()
	dsn := Get(t, kind).DSN
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
	if CI() && kind != SQLServer {
		t.Fatalf("testdb: %s is required under CI and is not reachable: %s", kind, why)
	}
	t.Skipf("testdb: %s not reachable, skipping: %s", kind, why)
}

func dsnFor(kind string) (string, error) {
	switch kind {
	case Postgres:
		return envOr("LOCKPLUGIN_POSTGRES_DSN", DefaultPostgresDSN), nil
	case MySQL:
		return envOr("LOCKPLUGIN_MYSQL_DSN", DefaultMySQLDSN), nil
	case TiDB:
		return envOr("LOCKPLUGIN_TIDB_DSN", DefaultTiDBDSN), nil
	case SQLServer:
		if v := os.Getenv("LOCKPLUGIN_SQLSERVER_DSN"); v != "" {
			return v, nil
		}
		return "", errors.New("LOCKPLUGIN_SQLSERVER_DSN is not set (docker compose up sqlserver, then set it)")
	}
	return "", fmt.Errorf("testdb: unknown database %q (want %s, %s, %s or %s)", kind, Postgres, MySQL, TiDB, SQLServer)
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
	case SQLServer:
		return sqlserver.Open(dsn)
	default:
		return mysql.Open(dsn)
	}
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
	d := Dialector(kind, dsn)
	lg := logger.Discard
	if os.Getenv("LOCKPLUGIN_LOG") != "" {
		lg = logger.Default.LogMode(logger.Info)
	}
	db, err := gorm.Open(d, &gorm.Config{Logger: lg})
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
	if err := db.Use(lockplugin.New()); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	tg := &Target{Name: kind, Dialect: dialects.Of(db), DB: db, SQL: sqlDB, DSN: dsn}
	if tg.Dialect.Kind == dialects.MariaDB {
		tg.Name = "mariadb"
	}
	if kind == TiDB && tg.Dialect.Engine != dialects.TiDB {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("testdb: LOCKPLUGIN_TIDB_DSN reaches %s, not TiDB", tg.Dialect)
	}
	return tg, nil
}

// closeAll closes tg's pool.
func (tg *Target) closeAll() { _ = tg.SQL.Close() }

// Unique returns a name unique to this test run, for lock names and keys:
// prefix, test name and a timestamp.
func Unique(t testing.TB, prefix string) string {
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	return fmt.Sprintf("%s-%s-%d", prefix, name, time.Now().UnixNano())
}

var (
	redisOnce sync.Once
	redisAddr string
	redisErr  error
)

// RedisAddr returns LOCKPLUGIN_REDIS_ADDR or the default address once a
// Redis answers there. It skips the test when none answers, and fails it
// under CI.
func RedisAddr(t testing.TB) string {
	t.Helper()
	redisOnce.Do(func() {
		redisAddr = envOr("LOCKPLUGIN_REDIS_ADDR", DefaultRedisAddr)
		c := redis.NewClient(&redis.Options{Addr: redisAddr, DialTimeout: 2 * time.Second})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		redisErr = c.Ping(ctx).Err()
	})
	if redisErr != nil {
		if CI() {
			t.Fatalf("testdb: Redis is required under CI and is not reachable at %s: %v", redisAddr, redisErr)
		}
		t.Skipf("testdb: Redis not reachable at %s, skipping: %v", redisAddr, redisErr)
	}
	return redisAddr
}

// Redis returns a new client for the reachable Redis, closed when the test
// ends.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: RedisAddr(t), DialTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
