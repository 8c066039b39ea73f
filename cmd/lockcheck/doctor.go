package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
)

// finding is one thing doctor found that breaks, or may break, a
// guarantee: what it is and what to change.
type finding struct {
	ID      string `json:"id"`
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
}

// doctorOptions are doctor's flags.
type doctorOptions struct {
	dsn        string
	redis      string
	leaseTable string
	json       bool
	maxSkew    time.Duration
	timeout    time.Duration
}

// Doctor thresholds.
const (
	// defaultMaxSkew is the app/database clock difference doctor reports.
	defaultMaxSkew = time.Second
	// poolerProbeTimeout bounds each statement of the pooler probe: a
	// pooler with one server connection makes the probe wait for itself.
	poolerProbeTimeout = 3 * time.Second
	// defaultLookTimeout bounds doctor and who.
	defaultLookTimeout = time.Minute
)

// runDoctor is `lockcheck doctor`: exit 0 when nothing is wrong, 1 with
// findings, 2 for bad flags or an unreachable database.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o doctorOptions
	fs := flag.NewFlagSet("lockcheck doctor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.dsn, "dsn", "", "database to check (as for lockcheck; required)")
	fs.StringVar(&o.redis, "redis", "", "Redis address host:port to check as well")
	fs.StringVar(&o.leaseTable, "lease-table", sqlstore.DefaultTable, "lease table whose rows without expiry, and backlog of rows to purge, are checked")
	fs.BoolVar(&o.json, "json", false, "print the findings as JSON")
	fs.DurationVar(&o.maxSkew, "max-skew", defaultMaxSkew, "largest app/database clock difference accepted")
	fs.DurationVar(&o.timeout, "timeout", defaultLookTimeout, "give up after this long (opening the database: at most "+openTimeout.String()+")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "Usage: lockcheck doctor -dsn DSN [-redis ADDR] [-lease-table NAME] [-timeout D] [-json]")
			fmt.Fprintln(stdout, "\nChecks a database (and Redis) for set-ups that break lockplugin's guarantees:")
			fmt.Fprintln(stdout, "a pooler in transaction mode, a read replica, isolation defaults, SQLite without")
			fmt.Fprintln(stdout, "WAL or busy_timeout, Redis without persistence or with a lagging replica, clock")
			fmt.Fprintln(stdout, "skew, old leases without expiry, lease and holds tables never purged. Exit 0:")
			fmt.Fprintln(stdout, "nothing found; 1: findings; 2: bad flags or unreachable. It only reads: a SQLite")
			fmt.Fprintln(stdout, "file is opened read-only and must exist.")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return exitOK
		}
		fmt.Fprintf(stderr, "lockcheck doctor: %v\n", err)
		return exitUsage
	}
	if o.dsn == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "lockcheck doctor: -dsn DSN is required, and every option is a flag")
		return exitUsage
	}
	if o.timeout <= 0 {
		fmt.Fprintf(stderr, "lockcheck doctor: -timeout must be positive, not %s\n", o.timeout)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	d, err := parseDSN(o.dsn)
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck doctor: %v\n", err)
		return exitUsage
	}
	findings, err := doctor(ctx, d, o)
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck doctor: %s\n", oneLine(d.redact(err.Error())))
		return exitUsage
	}
	if o.json {
		if findings == nil {
			findings = []finding{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(findings)
	} else if len(findings) == 0 {
		fmt.Fprintf(stdout, "%s: nothing found that breaks lockplugin's guarantees\n", d.shown)
	} else {
		fmt.Fprintf(stdout, "%s: %d finding(s)\n", d.shown, len(findings))
		for _, f := range findings {
			fmt.Fprintf(stdout, "\n[%s] %s\n  fix: %s\n", f.ID, d.redact(f.Problem), f.Fix)
		}
	}
	if len(findings) > 0 {
		return exitViolated
	}
	return exitOK
}

// doctor opens d and runs the checks for its kind, then Redis's.
func doctor(ctx context.Context, d database, o doctorOptions) ([]finding, error) {
	if pd, ok := d.dialector.(*postgres.Dialector); ok {
		// Extended-protocol prepared statements fail behind a pooler in
		// transaction mode before the probe could tell why.
		cfg := *pd.Config
		cfg.PreferSimpleProtocol = true
		d.dialector = postgres.New(cfg)
	}
	// doctor only looks: SQLite read-only, as the application's DSN
	// would see the file, without lockcheck's pragmas.
	d, wantWAL, err := d.readOnly()
	if err != nil {
		return nil, err
	}
	db, err := openDatabase(ctx, d)
	if err != nil {
		return nil, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	defer sqlDB.Close()
	var fs []finding
	switch d.kind {
	case "postgres":
		fs, err = doctorPostgres(ctx, sqlDB)
	case "mysql":
		fs, err = doctorMySQL(ctx, sqlDB)
	case "sqlite":
		fs, err = doctorSQLite(ctx, sqlDB, o.dsn, wantWAL)
	}
	if err != nil {
		return nil, err
	}
	if d.kind != "sqlite" {
		if f, err := clockSkew(ctx, sqlDB, d.kind, o.maxSkew); err != nil {
			return nil, err
		} else if f != nil {
			fs = append(fs, *f)
		}
	}
	fs = append(fs, doctorClaim(ctx, sqlDB, d.kind)...)
	if f, err := staleLeases(ctx, sqlDB, d.kind, o.leaseTable); err != nil {
		return nil, err
	} else if f != nil {
		fs = append(fs, *f)
	}
	if f := leaseBacklogFinding(ctx, sqlDB, d.kind, o.leaseTable); f != nil { // doctor_lease_backlog.go
		fs = append(fs, *f)
	}
	if f, _ := expiredHolds(ctx, sqlDB, d.kind); f != nil { // doctor_holds.go
		fs = append(fs, *f)
	}
	fs = append(fs, nullVersions(ctx, sqlDB, d.kind)...) // doctor_version.go
	if o.redis != "" {
		rf, err := doctorRedis(ctx, o.redis)
		if err != nil {
			return nil, err
		}
		fs = append(fs, rf...)
	}
	return fs, nil
}

// doctorPostgres: a pooler in transaction mode, a replica, isolation and
// read-only defaults.
func doctorPostgres(ctx context.Context, db *sql.DB) ([]finding, error) {
	var fs []finding
	pooled, why, err := pgPooler(ctx, db)
	if err != nil {
		return nil, err
	}
	if pooled {
		fs = append(fs, finding{ID: "pooler",
			Problem: "a connection pooler in transaction (or statement) mode is in front of PostgreSQL: " + why + ". Session advisory locks (advisory.With/Acquire) and anything pinned to a session stay on a server connection that other clients go on to use, or are released under you",
			Fix:     "point lockplugin at PostgreSQL directly or at a pool in session mode (PgBouncer pool_mode = session) for locking; behind transaction mode use advisory.WithTx (transaction-scoped locks), row locks, leases or holds"})
	}
	var recovery bool
	if err := db.QueryRowContext(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery); err != nil {
		return nil, fmt.Errorf("reading pg_is_in_recovery(): %w", err)
	}
	if recovery {
		fs = append(fs, finding{ID: "replica",
			Problem: "the DSN reaches a PostgreSQL standby (pg_is_in_recovery() is true): writes fail, and locks taken here do not exclude writers on the primary",
			Fix:     "point the DSN at the primary (with libpq/pgx: target_session_attrs=read-write)"})
	}
	var iso, ro string
	if err := db.QueryRowContext(ctx, "SELECT current_setting('default_transaction_isolation'), current_setting('default_transaction_read_only')").Scan(&iso, &ro); err != nil {
		return nil, fmt.Errorf("reading transaction defaults: %w", err)
	}
	if iso != "read committed" {
		fs = append(fs, finding{ID: "isolation",
			Problem: fmt.Sprintf("default_transaction_isolation is %q: holds.Acquire inside a caller's transaction is refused unless it is READ COMMITTED, and REPEATABLE READ/SERIALIZABLE turn version and row-lock conflicts into serialization failures", iso),
			Fix:     "ALTER DATABASE ... SET default_transaction_isolation = 'read committed' (or set it per transaction where you need more)"})
	}
	if ro == "on" {
		fs = append(fs, finding{ID: "read-only",
			Problem: "default_transaction_read_only is on: every lockplugin write (leases, holds, versioned updates) fails",
			Fix:     "ALTER ROLE/DATABASE ... SET default_transaction_read_only = off, or use a read-write DSN"})
	}
	return fs, nil
}

// pgPooler tells whether one client connection's statements run on more
// than one server session. Client A reads its backend pid; client B
// opens a transaction (a transaction pooler pins a server connection to B
// for it, most likely the one A just used); A reads its pid again. Without
// a pooler, or with one in session mode, A's pid cannot change. A probe
// whose second read waits (a pooler with one server connection, which B
// holds) counts too. Nothing is locked, so nothing can be left behind.
func pgPooler(ctx context.Context, db *sql.DB) (bool, string, error) {
	a, err := db.Conn(ctx)
	if err != nil {
		return false, "", err
	}
	defer a.Close()
	b, err := db.Conn(ctx)
	if err != nil {
		return false, "", err
	}
	defer b.Close()
	pid := func(c *sql.Conn) (int64, error) {
		cctx, cancel := context.WithTimeout(ctx, poolerProbeTimeout)
		defer cancel()
		var p int64
		err := c.QueryRowContext(cctx, "SELECT pg_backend_pid()").Scan(&p)
		return p, err
	}
	first, err := pid(a)
	if err != nil {
		return false, "", fmt.Errorf("reading pg_backend_pid(): %w", err)
	}
	for i := 0; i < 3; i++ {
		tx, err := b.BeginTx(ctx, nil)
		if err != nil {
			return false, "", err
		}
		other, err := func() (int64, error) {
			var p int64
			err := tx.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&p)
			return p, err
		}()
		if err != nil {
			_ = tx.Rollback()
			return false, "", err
		}
		again, err := pid(a)
		_ = tx.Rollback()
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			return true, fmt.Sprintf("a statement of one client waited %v for another client's open transaction (one server connection shared by both)", poolerProbeTimeout), nil
		case err != nil:
			return false, "", fmt.Errorf("reading pg_backend_pid(): %w", err)
		case again != first:
			return true, fmt.Sprintf("two statements on one client connection ran in server sessions %d and %d (while another client's transaction held session %d)", first, again, other), nil
		}
	}
	return false, "", nil
}

// doctorMySQL: a read-only server (replica) and isolation.
func doctorMySQL(ctx context.Context, db *sql.DB) ([]finding, error) {
	var fs []finding
	var ro int
	if err := db.QueryRowContext(ctx, "SELECT @@global.read_only").Scan(&ro); err != nil {
		return nil, fmt.Errorf("reading @@read_only: %w", err)
	}
	if ro != 0 {
		fs = append(fs, finding{ID: "replica",
			Problem: "@@read_only is on: this is most likely a replica; writes from non-SUPER users fail, and GET_LOCK here does not exclude clients of the primary",
			Fix:     "point the DSN at the primary"})
	}
	var iso string
	err := db.QueryRowContext(ctx, "SELECT @@transaction_isolation").Scan(&iso)
	if err != nil {
		err = db.QueryRowContext(ctx, "SELECT @@tx_isolation").Scan(&iso) // MariaDB before 11.1, MySQL 5.7
	}
	if err != nil {
		return nil, fmt.Errorf("reading the isolation level: %w", err)
	}
	if strings.EqualFold(iso, "READ-UNCOMMITTED") {
		fs = append(fs, finding{ID: "isolation",
			Problem: "the default isolation is READ-UNCOMMITTED: reads see uncommitted versions and holds, so a version check or a hold count can act on data that is rolled back",
			Fix:     "SET GLOBAL transaction_isolation = 'REPEATABLE-READ' (or READ-COMMITTED)"})
	}
	return fs, nil
}

// doctorSQLite: WAL, busy_timeout and immediate transactions. db is open
// read-only with the DSN's parameters but no journal_mode pragma: the
// journal mode read is the file's, and wantWAL says the DSN switches the
// file to WAL when the application opens it.
func doctorSQLite(ctx context.Context, db *sql.DB, dsn string, wantWAL bool) ([]finding, error) {
	var fs []finding
	var mode string
	var busy int
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return nil, err
	}
	if err := db.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
		return nil, err
	}
	if !strings.EqualFold(mode, "wal") && !wantWAL {
		fs = append(fs, finding{ID: "sqlite-wal",
			Problem: fmt.Sprintf("SQLite journal_mode is %s, not WAL: readers and the writer block each other, and a reader can make a writer fail with \"database is locked\"", mode),
			Fix:     "add _pragma=journal_mode(WAL) to the DSN (once per database file; it persists)"})
	}
	if busy == 0 {
		fs = append(fs, finding{ID: "sqlite-busy-timeout",
			Problem: "SQLite busy_timeout is 0: a second writer fails at once with \"database is locked\" instead of waiting",
			Fix:     "add _pragma=busy_timeout(20000) to the DSN"})
	}
	if strings.Contains(dsn, "?") && !strings.Contains(dsn, "_txlock=immediate") {
		fs = append(fs, finding{ID: "sqlite-txlock",
			Problem: "transactions begin DEFERRED: one that reads and then writes can fail with SQLITE_BUSY halfway, where busy_timeout does not help",
			Fix:     "add _txlock=immediate to the DSN (or register lockplugin with SQLiteWriterLock)"})
	}
	return fs, nil
}

// clockSkew compares this host's clock with the database's, against the
// midpoint of the round trip.
func clockSkew(ctx context.Context, db *sql.DB, kind string, max time.Duration) (*finding, error) {
	q := map[string]string{
		"postgres":  "SELECT extract(epoch from clock_timestamp())::float8",
		"mysql":     "SELECT UNIX_TIMESTAMP(NOW(6))",
		"sqlserver": "SELECT CAST(DATEDIFF_BIG(MICROSECOND, '1970-01-01', SYSUTCDATETIME()) AS FLOAT) / 1e6",
	}[kind]
	if q == "" {
		return nil, nil
	}
	before := time.Now()
	var raw string
	if err := db.QueryRowContext(ctx, q).Scan(&raw); err != nil {
		return nil, fmt.Errorf("reading the database clock: %w", err)
	}
	after := time.Now()
	secs, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return nil, fmt.Errorf("reading the database clock %q: %w", raw, err)
	}
	mid := before.Add(after.Sub(before) / 2)
	skew := time.Duration((secs - float64(mid.UnixNano())/1e9) * float64(time.Second))
	if math.Abs(float64(skew)) <= float64(max) {
		return nil, nil
	}
	return &finding{ID: "clock-skew",
		Problem: fmt.Sprintf("the database clock is %v off this host's (round trip %v): expiries read by one clock and written by the other (holds' expires_at, lease rows, Guard) are off by as much", skew.Round(time.Millisecond), after.Sub(before).Round(time.Millisecond)),
		Fix:     "run NTP (chrony, systemd-timesyncd) on both hosts"}, nil
}

var plainTable = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// staleLeases reports rows of the lease table without expiry (expires_at
// 0: NoExpiry). The table stores no acquisition time, so doctor cannot
// tell a day-old row from a new one: it reports them all and says how to
// look at them.
func staleLeases(ctx context.Context, db *sql.DB, kind, table string) (*finding, error) {
	if !plainTable.MatchString(table) {
		return nil, fmt.Errorf("-lease-table %q: want a plain table name", table)
	}
	var n int64
	// The name is validated above; a missing table is no finding.
	q := "SELECT COUNT(*) FROM " + table + " WHERE expires_at = 0"
	err := db.QueryRowContext(ctx, q).Scan(&n)
	if err != nil && !dialects.IsUndefinedTable(err) {
		return uncheckedFinding("lease-no-expiry", "leases without expiry", table, err, q), nil
	}
	if err != nil || n == 0 {
		return nil, nil
	}
	return &finding{ID: "lease-no-expiry",
		Problem: fmt.Sprintf("%d lease(s) in %s have no expiry (lease.NoExpiry): a holder that died keeps its name until someone deletes the row", n, table),
		Fix:     fmt.Sprintf("check them with SELECT lock_name, owner, fence FROM %s WHERE expires_at = 0; delete the ones whose holder is gone, and prefer TTL with KeepAlive", table)}, nil
}

// doctorRedis: persistence and replication.
func doctorRedis(ctx context.Context, addr string) ([]finding, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: connectTimeout})
	defer c.Close()
	info, err := c.Info(ctx, "persistence", "replication").Result()
	if err != nil {
		return nil, fmt.Errorf("cannot read INFO from Redis at %s: %w", addr, err)
	}
	save := ""
	if v, err := c.ConfigGet(ctx, "save").Result(); err == nil {
		save = v["save"]
	} else {
		save = "unknown"
	}
	return redisFindings(parseInfo(info), save), nil
}

// parseInfo reads INFO's "key:value" lines.
func parseInfo(info string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			m[k] = v
		}
	}
	return m
}

var slaveLag = regexp.MustCompile(`lag=(\d+)`)

// redisFindings judges INFO persistence/replication and CONFIG GET save
// ("unknown" when CONFIG is not allowed).
func redisFindings(info map[string]string, save string) []finding {
	var fs []finding
	if info["aof_enabled"] == "0" && save == "" {
		fs = append(fs, finding{ID: "redis-persistence",
			Problem: "Redis has neither AOF nor RDB snapshots: a restart forgets every lease, and another process can take a lease whose holder is still working",
			Fix:     "enable appendonly yes (appendfsync everysec or always), or accept that a restart frees all leases and fence what they protect"})
	}
	if info["role"] == "slave" {
		fs = append(fs, finding{ID: "redis-replica",
			Problem: "the Redis address is a replica: lease writes are refused (READONLY) or, with replica-read-only no, never reach the primary",
			Fix:     "point -redis and the store's client at the primary"})
	}
	for k, v := range info {
		if !strings.HasPrefix(k, "slave") || k == "slave_read_only" {
			continue
		}
		if m := slaveLag.FindStringSubmatch(v); m != nil {
			if lag, _ := strconv.Atoi(m[1]); lag > 1 {
				fs = append(fs, finding{ID: "redis-replica-lag",
					Problem: fmt.Sprintf("replica %s lags %d s: after a failover it can come up without leases granted in that time, and two holders can overlap", k, lag),
					Fix:     "fix the replication lag, or use min-replicas-to-write / WAIT so that a lease is on a replica before it is used"})
			}
		}
	}
	return fs
}
