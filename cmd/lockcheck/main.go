// Command lockcheck proves lockplugin's guarantees on a real database: for
// each mechanism it releases N goroutines together against one counter,
// queue or resource and reports whether any update was lost, any job
// claimed twice or any slot oversold, and how many operations per second
// the mechanism managed there.
//
// Usage:
//
//	lockcheck [check] [-dsn DSN] [-redis ADDR] [-workers N] [-rounds N] [-only a,b] [-json] [-wide]
//	lockcheck doctor -dsn DSN [-redis ADDR] ...
//	lockcheck who [-dsn DSN] [-redis ADDR] [-local DIR] ...
//
// Without -dsn it runs on a fresh SQLite file (WAL) in a temporary
// directory, so nothing needs to be installed. The DSN chooses the
// database:
//
//	postgres://user:pass@host:5432/db?sslmode=disable  (or a key=value DSN)
//	mysql://user:pass@tcp(host:3306)/db
//	sqlserver://user:pass@host:1433?database=db
//	sqlite:/path/to/file.db
//
// A password in the DSN is never printed. The unprotected lost-update
// scenario is a baseline: it is expected to lose updates, and shows that the
// check can fail. A mechanism the database cannot run is reported as "not
// supported here" with the reason.
//
// Exit status: 0 when every guarantee held, 1 when one was violated or a
// scenario failed with an error, 2 for bad flags or an unreachable
// database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

func main() {
	// go-redis logs dial failures itself; lockcheck reports them in one line.
	redis.SetLogger(quietLogger{})
	// So does go-sql-driver ("packets.go:58 unexpected EOF").
	_ = mysqldriver.SetLogger(log.New(io.Discard, "", 0))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// quietLogger drops go-redis's log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Exit statuses.
const (
	exitOK       = 0
	exitViolated = 1
	exitUsage    = 2
)

// options are the parsed flags.
type options struct {
	dsn     string
	redis   string
	workers int
	rounds  int
	only    []string
	json    bool
	wide    bool
	prefix  string
	timeout time.Duration
}

var validPrefix = regexp.MustCompile(`^[a-z][a-z0-9_]{0,23}$`)

// usageError is a bad command line: exit status 2, one line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// parseFlags reads the command line. It returns flag.ErrHelp for -h.
func parseFlags(args []string, help io.Writer) (options, error) {
	var o options
	var only string
	fs := flag.NewFlagSet("lockcheck", flag.ContinueOnError)
	// The flag package would print the whole usage on every mistake; lockcheck
	// prints one line instead, and the usage only for -h.
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.dsn, "dsn", "", "database to check: postgres://..., mysql://user:pass@tcp(host:port)/db, sqlserver://..., sqlite:PATH (default: a fresh SQLite file in a temporary directory)")
	fs.StringVar(&o.redis, "redis", "", "Redis address host:port; adds the lease scenario on the Redis store")
	fs.IntVar(&o.workers, "workers", 8, "goroutines released together in each scenario")
	fs.IntVar(&o.rounds, "rounds", 25, "operations per goroutine (races, for the capacity scenario)")
	fs.StringVar(&only, "only", "", "comma-separated scenario IDs to run (default: all)")
	fs.BoolVar(&o.json, "json", false, "print the results as JSON")
	fs.BoolVar(&o.wide, "wide", false, "print each table row on one line, however long (default: wrap cells to fit "+strconv.Itoa(tableWidth)+" columns)")
	fs.StringVar(&o.prefix, "prefix", "lockcheck", "start of every table, lock name and key lockcheck creates")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(help, fs)
			return o, err
		}
		return o, &usageError{msg: err.Error()}
	}
	switch {
	case fs.NArg() > 0:
		return o, usagef("unexpected argument %q: every option is a flag", fs.Arg(0))
	case o.workers < 1 || o.workers > 256:
		return o, usagef("-workers must be between 1 and 256, not %d", o.workers)
	case o.rounds < 1 || o.rounds > 100000:
		return o, usagef("-rounds must be between 1 and 100000, not %d", o.rounds)
	case !validPrefix.MatchString(o.prefix):
		return o, usagef("-prefix %q: want a lower-case letter, then up to 23 lower-case letters, digits or underscores", o.prefix)
	case o.timeout <= 0:
		return o, usagef("-timeout must be positive, not %s", o.timeout)
	}
	if only != "" {
		known := map[string]check{}
		for _, c := range allChecks() {
			known[c.id] = c
		}
		for _, id := range strings.Split(only, ",") {
			id = strings.TrimSpace(id)
			c, ok := known[id]
			switch {
			case !ok:
				return o, usagef("-only: unknown scenario %q; known: %s", id, strings.Join(checkIDs(), ", "))
			case c.needsRedis && o.redis == "":
				return o, usagef("-only: scenario %q needs -redis ADDR", id)
			}
			o.only = append(o.only, id)
		}
	}
	return o, nil
}

func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "Usage: lockcheck [check] [-dsn DSN] [-redis ADDR] [-workers N] [-rounds N] [-only a,b] [-json] [-wide]")
	fmt.Fprintln(w, "       lockcheck doctor -dsn DSN [flags]   (lockcheck doctor -h for its flags)")
	fmt.Fprintln(w, "       lockcheck who [-dsn DSN] [flags]    (lockcheck who -h for its flags)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	fmt.Fprintln(w, "  check   (the default) run lockplugin's concurrency scenarios on a database and")
	fmt.Fprintln(w, "          report whether any guarantee was violated; it creates and drops tables")
	fmt.Fprintln(w, "  doctor  look for set-ups that break the guarantees (a pooler in transaction mode,")
	fmt.Fprintln(w, "          a replica, SQLite without WAL, ...); reads only")
	fmt.Fprintln(w, "  who     list who holds which lease, hold or advisory lock; reads only, unless")
	fmt.Fprintln(w, "          -force-release")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Exit status 0: all held (nothing found); 1: a guarantee was violated (findings);")
	fmt.Fprintln(w, "2: bad flags, or a database that cannot be reached or does not answer.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags of check:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Scenarios (for -only):")
	for _, c := range allChecks() {
		fmt.Fprintf(w, "  %-19s %s\n", c.id, c.title)
	}
}

// run is main without the process: tests call it in-process.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "doctor" {
		return runDoctor(ctx, args[1:], stdout, stderr) // doctor.go
	}
	if len(args) > 0 && args[0] == "who" {
		return runWho(ctx, args[1:], stdout, stderr) // who.go
	}
	if len(args) > 0 && args[0] == "check" {
		args = args[1:]
	}
	o, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck: %v (lockcheck -h for usage)\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	env, err := openEnv(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck: %v\n", err)
		return exitUsage
	}
	defer env.close()
	for _, note := range env.notes {
		fmt.Fprintf(stderr, "lockcheck: note: %s\n", note)
	}

	rep := runChecks(ctx, env, o, newProgress(stderr))
	if o.json {
		if err := rep.writeJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "lockcheck: writing JSON: %v\n", err)
			return exitViolated
		}
	} else {
		rep.writeTable(stdout, tableWidthFor(o.wide))
	}
	if rep.failed() {
		return exitViolated
	}
	return exitOK
}
