package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
)

// env is what the scenarios run against.
type env struct {
	// db has lockplugin registered.
	db *gorm.DB
	// writerLockDB, on SQLite only, has lockplugin registered with
	// SQLiteWriterLock.
	writerLockDB *gorm.DB
	// dialect is what lockplugin recognised behind db.
	dialect dialects.Dialect
	// database is the parsed -dsn.
	database database
	// redis is the -redis client, nil without the flag.
	redis *redis.Client
	// redisShown is the Redis address with any password masked.
	redisShown string
	// tmpDir holds the temporary SQLite file, removed by close.
	tmpDir string
	// notes are warnings about the setup, printed before the run.
	notes []string
}

// openEnv opens and pings the database and Redis the options name. Its
// errors are one line, with every secret masked.
func openEnv(ctx context.Context, o options) (*env, error) {
	e := &env{}
	if o.dsn == "" {
		dir, err := os.MkdirTemp("", "lockcheck-")
		if err != nil {
			return nil, fmt.Errorf("creating a temporary directory for SQLite: %w", err)
		}
		e.tmpDir = dir
		e.database = sqliteDatabase(filepath.Join(dir, "lockcheck.db"))
		e.database.shown += " (temporary)"
	} else {
		d, err := parseDSN(o.dsn)
		if err != nil {
			return nil, err
		}
		e.database = d
	}
	if err := e.openDB(ctx, o.workers); err != nil {
		e.close()
		return nil, err
	}
	if o.redis != "" {
		if err := e.openRedis(ctx, o.redis); err != nil {
			e.close()
			return nil, err
		}
	}
	return e, nil
}

func (e *env) openDB(ctx context.Context, workers int) error {
	d := e.database
	fail := func(what string, err error) error {
		return fmt.Errorf("%s %s at %s: %s", what, d.kind, d.shown, oneLine(d.redact(err.Error())))
	}
	db, err := openDatabase(ctx, d)
	if err != nil {
		return err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return fail("cannot open", err)
	}
	// Room for every worker plus the connections a mechanism pins (an
	// advisory lock holds one per holder) and the scenario's own checks.
	sqlDB.SetMaxOpenConns(2*workers + 4)
	sqlDB.SetMaxIdleConns(2*workers + 4)
	if err := db.Use(lockplugin.New()); err != nil {
		_ = sqlDB.Close()
		return fail("cannot register lockplugin on", err)
	}
	e.db = db
	e.dialect = dialects.Of(db)
	if e.dialect.Kind == dialects.SQLite {
		e.notes = append(e.notes, sqliteNotes(ctx, db)...)
		if err := e.openWriterLockDB(workers); err != nil {
			return fail("cannot open", err)
		}
	}
	return nil
}

// openTimeout bounds opening a database: connecting, TLS, the protocol
// handshake and the first queries (GORM's MySQL dialector asks SELECT
// VERSION() inside gorm.Open, with no context and so no deadline: a server
// that accepts the connection and never answers would keep lockcheck
// waiting forever).
const openTimeout = 10 * time.Second

// openDatabase opens d with GORM and pings it, all within openTimeout (or
// ctx's deadline, when sooner). The open runs in its own goroutine because
// not every step of it takes a context; when the time runs out, that
// goroutine is left to finish or fail on its own and closes what it
// opened. Errors are one line, naming the database, with secrets masked.
func openDatabase(ctx context.Context, d database) (*gorm.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	bound := openTimeout
	if dl, ok := ctx.Deadline(); ok {
		bound = time.Until(dl).Round(100 * time.Millisecond)
	}
	type opened struct {
		db   *gorm.DB
		what string
		err  error
	}
	done := make(chan opened, 1)
	go func() {
		db, err := gorm.Open(d.dialector, &gorm.Config{Logger: logger.Discard})
		if err != nil {
			done <- opened{what: "cannot open", err: err}
			return
		}
		sqlDB, err := db.DB()
		if err == nil {
			err = sqlDB.PingContext(ctx)
			if err != nil {
				_ = sqlDB.Close()
			}
		}
		if err != nil {
			done <- opened{what: "cannot reach", err: err}
			return
		}
		done <- opened{db: db}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("%s %s at %s: %s", r.what, d.kind, d.shown, oneLine(d.redact(r.err.Error())))
		}
		return r.db, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.db != nil {
				if sqlDB, err := r.db.DB(); err == nil {
					_ = sqlDB.Close()
				}
			}
		}()
		return nil, fmt.Errorf("no answer from %s at %s within %v: connecting, the handshake or the first query did not finish (a server that accepts connections but does not answer: is this the right host and port, and is the server up and not overloaded?)", d.kind, d.shown, bound)
	}
}

// sqliteNotes warns about the SQLite settings behind "database is locked".
func sqliteNotes(ctx context.Context, db *gorm.DB) []string {
	var mode string
	var busy int
	if err := db.WithContext(ctx).Raw("PRAGMA journal_mode").Scan(&mode).Error; err != nil {
		return nil
	}
	if err := db.WithContext(ctx).Raw("PRAGMA busy_timeout").Scan(&busy).Error; err != nil {
		return nil
	}
	var notes []string
	if !strings.EqualFold(mode, "wal") {
		notes = append(notes, fmt.Sprintf("SQLite journal_mode is %s, not WAL: readers and the writer block each other (add _pragma=journal_mode(WAL) to the DSN)", mode))
	}
	if busy == 0 {
		notes = append(notes, "SQLite busy_timeout is 0: concurrent writers fail at once with \"database is locked\" (add _pragma=busy_timeout(20000) to the DSN)")
	}
	return notes
}

func (e *env) openRedis(ctx context.Context, addr string) error {
	opts := &redis.Options{Addr: addr, DialTimeout: 2 * time.Second}
	shown := addr
	if strings.HasPrefix(addr, "redis://") || strings.HasPrefix(addr, "rediss://") {
		parsed, err := redis.ParseURL(addr)
		if err != nil {
			return fmt.Errorf("-redis: not a valid redis:// URL")
		}
		opts = parsed
		if opts.Password != "" {
			e.database.secrets = append(e.database.secrets, opts.Password)
		}
		shown = e.database.redact(addr)
	}
	c := redis.NewClient(opts)
	pingCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := c.Ping(pingCtx).Err(); err != nil {
		_ = c.Close()
		return fmt.Errorf("cannot reach Redis at %s: %s", shown, oneLine(e.database.redact(err.Error())))
	}
	e.redis, e.redisShown = c, shown
	return nil
}

func (e *env) close() {
	if e.redis != nil {
		_ = e.redis.Close()
	}
	for _, db := range []*gorm.DB{e.writerLockDB, e.db} {
		if db != nil {
			if sqlDB, err := db.DB(); err == nil {
				_ = sqlDB.Close()
			}
		}
	}
	if e.tmpDir != "" {
		_ = os.RemoveAll(e.tmpDir)
	}
}

// oneLine keeps a driver's multi-line message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
