package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"io"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
)

// holding is one row of `lockcheck who`: something held now.
type holding struct {
	// Mechanism is "lease-table", "lease-redis", "lease-local", "hold" or
	// "advisory".
	Mechanism string `json:"mechanism"`
	// Name is the lock name (a lease's stored name; "table/id" for a
	// hold; for a PostgreSQL advisory lock, the name given with -name or
	// "key:<bigint>").
	Name string `json:"name"`
	// Holder is the owner token, the hold's holder, or the session
	// (pid/connection id, application, client address).
	Holder string `json:"holder"`
	// Fence is the lease's fencing token (0 for others).
	Fence int64 `json:"fence,omitempty"`
	// Expires is when it expires; empty for never (or not applicable).
	Expires *time.Time `json:"expires,omitempty"`
	// Source says where an advisory lock was read: "pg_locks",
	// "performance_schema.metadata_locks", "IS_USED_LOCK" (MySQL/MariaDB
	// without performance_schema: only the -name locks) or
	// "sys.dm_tran_locks"; for a local lease, "/proc/locks" or "probe".
	Source string `json:"source,omitempty"`
}

type whoOptions struct {
	dsn, redis, redisPrefix, leaseTable, holdsTable, force string
	holder, local                                          string
	names                                                  stringList
	json, wide                                             bool
	timeout                                                time.Duration
	// leaseTableSet and holdsTableSet: the table was named on the command
	// line, so its absence is an error, not "nothing of that kind here".
	leaseTableSet, holdsTableSet bool
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// runWho is `lockcheck who`: list who holds what, and -force-release a
// lease. Exit 0, or 2 for bad flags or an unreachable server.
func runWho(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o whoOptions
	fs := flag.NewFlagSet("lockcheck who", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.dsn, "dsn", "", "database (as for lockcheck)")
	fs.StringVar(&o.redis, "redis", "", "Redis address host:port of a lease store")
	fs.StringVar(&o.redisPrefix, "redis-prefix", redisstore.DefaultPrefix, "the Redis store's key prefix")
	fs.StringVar(&o.leaseTable, "lease-table", sqlstore.DefaultTable, "the table store's table")
	fs.StringVar(&o.holdsTable, "holds-table", holds.DefaultTable, "the holds table")
	fs.Var(&o.names, "name", "an advisory lock name to look for (repeatable): PostgreSQL keys are hashes, MySQL/MariaDB are asked IS_USED_LOCK")
	fs.StringVar(&o.force, "force-release", "", "end the lease of this name whoever holds it, bumping its fence (table store with -dsn, Redis store with -redis); a name table/id ends that resource's holds (with -dsn), only -holder's when given")
	fs.StringVar(&o.holder, "holder", "", "with -force-release table/id: end only this holder's hold")
	fs.StringVar(&o.local, "local", "", "directory of a local lease store (lease.NewLocalStore) to list; -name names are recognised")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.BoolVar(&o.wide, "wide", false, "print each row on one line, however long (default: wrap cells to fit "+strconv.Itoa(tableWidth)+" columns)")
	fs.DurationVar(&o.timeout, "timeout", defaultLookTimeout, "give up after this long (opening the database: at most "+openTimeout.String()+")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "Usage: lockcheck who [-dsn DSN] [-redis ADDR] [-local DIR] [-name NAME]... [-force-release NAME|TABLE/ID [-holder H]] [-json]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return exitOK
		}
		fmt.Fprintf(stderr, "lockcheck who: %v\n", err)
		return exitUsage
	}
	if o.dsn == "" && o.redis == "" && o.local == "" {
		fmt.Fprintln(stderr, "lockcheck who: give -dsn, -redis, -local or several")
		return exitUsage
	}
	if o.holder != "" && o.force == "" {
		fmt.Fprintln(stderr, "lockcheck who: -holder goes with -force-release table/id")
		return exitUsage
	}
	if o.timeout <= 0 {
		fmt.Fprintf(stderr, "lockcheck who: -timeout must be positive, not %s\n", o.timeout)
		return exitUsage
	}
	fs.Visit(func(f *flag.Flag) {
		o.leaseTableSet = o.leaseTableSet || f.Name == "lease-table"
		o.holdsTableSet = o.holdsTableSet || f.Name == "holds-table"
	})
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	res, err := who(ctx, o)
	rows := res.rows
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck who: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	if o.force != "" {
		fmt.Fprintf(stderr, "lockcheck who: force-release %q: %s\n", o.force, res.forced.String())
	}
	if res.advisory != "" {
		fmt.Fprintf(stderr, "lockcheck who: advisory locks read from %s\n", res.advisory)
	}
	if o.json {
		if rows == nil {
			rows = []holding{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rows)
		return exitOK
	}
	table := [][]string{{"MECHANISM", "NAME", "HOLDER", "FENCE", "EXPIRES"}}
	for _, r := range rows {
		exp := "never"
		if r.Expires != nil {
			exp = r.Expires.UTC().Format(time.RFC3339Nano)
		}
		fence := ""
		if r.Fence != 0 {
			fence = strconv.FormatInt(r.Fence, 10)
		}
		table = append(table, []string{r.Mechanism, r.Name, r.Holder, fence, exp})
	}
	writeTable(stdout, table, tableWidthFor(o.wide))
	return exitOK
}

func who(ctx context.Context, o whoOptions) (whoResult, error) {
	var res whoResult
	if o.dsn != "" {
		d, err := parseDSN(o.dsn)
		if err != nil {
			return res, err
		}
		if o.force == "" {
			// Only listing: never write to what is examined.
			if d, _, err = d.readOnly(); err != nil {
				return res, err
			}
		}
		db, err := openDatabase(ctx, d)
		if err != nil {
			return res, err
		}
		sqlDB, err := db.DB()
		if err != nil {
			return res, err
		}
		defer sqlDB.Close()
		for _, t := range []struct {
			flag, name string
			set        bool
		}{{"-lease-table", o.leaseTable, o.leaseTableSet}, {"-holds-table", o.holdsTable, o.holdsTableSet}} {
			switch {
			case !plainTable.MatchString(t.name):
				return res, fmt.Errorf("%s %q: want a plain table name (letters, digits, underscores)", t.flag, t.name)
			case t.set && !tableExists(ctx, sqlDB, t.name):
				return res, fmt.Errorf("%s %s: no such table in %s at %s (or it cannot be read); check the name", t.flag, t.name, d.kind, d.shown)
			}
		}
		dia := dialects.Of(db)
		if plainTable.MatchString(o.leaseTable) && tableExists(ctx, sqlDB, o.leaseTable) {
			s, err := sqlstore.New(db, sqlstore.Table(o.leaseTable), sqlstore.CreateTable(false))
			if err != nil {
				return res, err
			}
			if o.force != "" {
				if res.forced.lease, err = s.ForceRelease(ctx, o.force); err != nil {
					return res, err
				}
			}
			ls, err := s.Leases(ctx)
			if err != nil {
				return res, err
			}
			for _, l := range ls {
				res.rows = append(res.rows, holding{Mechanism: "lease-table", Name: l.Name, Holder: l.Owner, Fence: l.Fence, Expires: timePtr(l.ExpiresAt)})
			}
		}
		if plainTable.MatchString(o.holdsTable) && tableExists(ctx, sqlDB, o.holdsTable) {
			if typ, id, ok := holdName(o.force); ok {
				n, err := holds.ForceRelease(ctx, db, typ, id, o.holder, holds.Table(o.holdsTable))
				if err != nil {
					return res, err
				}
				res.forced.holds += n
			}
			hs, err := activeHolds(ctx, sqlDB, dia, o.holdsTable)
			if err != nil {
				return res, err
			}
			res.rows = append(res.rows, hs...)
		}
		as, src, err := advisoryHolders(ctx, sqlDB, dia, o.names)
		if err != nil {
			return res, err
		}
		res.advisory = src
		res.rows = append(res.rows, as...)
	}
	if o.redis != "" {
		c := redis.NewClient(&redis.Options{Addr: o.redis, DialTimeout: connectTimeout})
		defer c.Close()
		s := redisstore.New(c, redisstore.Prefix(o.redisPrefix))
		if o.force != "" && !res.forced.lease {
			f, err := s.ForceRelease(ctx, o.force)
			if err != nil {
				return res, err
			}
			res.forced.lease = f
		}
		ls, err := s.Leases(ctx)
		if err != nil {
			return res, err
		}
		for _, l := range ls {
			res.rows = append(res.rows, holding{Mechanism: "lease-redis", Name: l.Name, Holder: l.Owner, Fence: l.Fence, Expires: timePtr(l.ExpiresAt)})
		}
	}
	if o.local != "" {
		ls, err := localLeases(ctx, o.local, o.names)
		if err != nil {
			return res, err
		}
		res.rows = append(res.rows, ls...)
	}
	return res, nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// tableExists tells whether a plain-named table can be read.
func tableExists(ctx context.Context, db *sql.DB, table string) bool {
	rows, err := db.QueryContext(ctx, "SELECT 1 FROM "+table+" WHERE 1 = 0")
	if err != nil {
		return false
	}
	_ = rows.Close()
	return true
}

// activeHolds reads the holds table directly (its columns are package
// holds' documented schema): holds neither released nor expired by the
// database clock.
func activeHolds(ctx context.Context, db *sql.DB, d dialects.Dialect, table string) ([]holding, error) {
	rows, err := db.QueryContext(ctx, "SELECT resource_type, resource_id, holder, expires_at FROM "+table+
		" WHERE released_at IS NULL AND (expires_at IS NULL OR expires_at > "+drivers.For(d).NowMillis()+") ORDER BY resource_type, resource_id, id")
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	defer rows.Close()
	var out []holding
	for rows.Next() {
		var typ, id, holder string
		var exp sql.NullInt64
		if err := rows.Scan(&typ, &id, &holder, &exp); err != nil {
			return nil, err
		}
		h := holding{Mechanism: "hold", Name: typ + "/" + id, Holder: holder}
		if exp.Valid {
			t := time.UnixMilli(exp.Int64)
			h.Expires = &t
		}
		out = append(out, h)
	}
	return out, rows.Err()
}
