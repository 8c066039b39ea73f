package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/internal/testdb"
	"github.com/lockplugin/lockplugin/dialects"
)

// testPrefix keeps this package's tables, lock names and keys apart from a
// lockcheck run with the default prefix and from other test packages.
const testPrefix = "lockcheck_t"

// TestMain lets TestExitStatus run the real main in a child process: the
// test binary re-executed with LOCKCHECK_TEST_MAIN=1 is lockcheck.
func TestMain(m *testing.M) {
	if os.Getenv("LOCKCHECK_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func runLockcheck(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// oneLineReason fails the test unless stderr is exactly one line naming
// lockcheck, with no stack trace.
func oneLineReason(t *testing.T, stderr string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "lockcheck: ") {
		t.Fatalf("want one line starting with \"lockcheck: \", got %q", stderr)
	}
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
		t.Fatalf("stack trace in %q", stderr)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-workers", "0"},
		{"-rounds", "-3"},
		{"-nosuchflag"},
		{"-workers", "many"},
		{"-only", "unprotected,nosuch"},
		{"-only", "lease-redis"},
		{"-prefix", "Robert'); DROP TABLE students;--"},
		{"-timeout", "0s"},
		{"extra"},
		{"-dsn", "oracle://scott:tiger@db/orcl"},
		{"-dsn", "sqlite:"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runLockcheck(t, args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
			}
			oneLineReason(t, stderr)
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if strings.Contains(stderr, "tiger") {
				t.Errorf("password printed: %q", stderr)
			}
		})
	}
}

func TestUnreachableDatabase(t *testing.T) {
	for _, dsn := range []string{
		"postgres://app:s3cr3t-pw@127.0.0.1:1/test?sslmode=disable",
		"host=127.0.0.1 port=1 user=app password=s3cr3t-pw dbname=test sslmode=disable",
		"mysql://app:s3cr3t-pw@tcp(127.0.0.1:1)/test",
		"sqlite:" + t.TempDir() + "/no/such/dir/x.db",
	} {
		t.Run(dsn, func(t *testing.T) {
			code, _, stderr := runLockcheck(t, "-dsn", dsn, "-prefix", testPrefix)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
			}
			oneLineReason(t, stderr)
			if strings.Contains(stderr, "s3cr3t") {
				t.Errorf("password printed: %q", stderr)
			}
			t.Log(stderr)
		})
	}
}

func TestUnreachableRedis(t *testing.T) {
	code, _, stderr := runLockcheck(t, "-redis", "redis://:s3cr3t-pw@127.0.0.1:1/0", "-only", "expr", "-prefix", testPrefix)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
	}
	oneLineReason(t, stderr)
	if strings.Contains(stderr, "s3cr3t") {
		t.Errorf("password printed: %q", stderr)
	}
}

func TestHelp(t *testing.T) {
	code, stdout, _ := runLockcheck(t, "-h")
	if code != exitOK {
		t.Fatalf("-h exits %d", code)
	}
	for _, c := range allChecks() {
		if !strings.Contains(stdout, c.id) {
			t.Errorf("usage does not list scenario %q", c.id)
		}
	}
	for _, sub := range []string{"check", "doctor", "who", "-wide"} {
		if !strings.Contains(stdout, sub) {
			t.Errorf("usage does not mention %q", sub)
		}
	}
	// check is the default command, and can be named.
	if code, out, _ := runLockcheck(t, "check", "-h"); code != exitOK || out != stdout {
		t.Errorf("check -h: exit %d, a different usage", code)
	}
}

// TestExitStatus runs lockcheck as a process: the status and stderr a
// shell sees, including that a bad flag prints no stack trace.
func TestExitStatus(t *testing.T) {
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"-h"}, exitOK},
		{[]string{"-workers", "x"}, exitUsage},
		{[]string{"-dsn", "postgres://app:s3cr3t-pw@127.0.0.1:1/test"}, exitUsage},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], c.args...)
			cmd.Env = append(os.Environ(), "LOCKCHECK_TEST_MAIN=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, stderr.String())
			}
			if c.code == exitUsage {
				oneLineReason(t, stderr.String())
				if strings.Contains(stderr.String(), "s3cr3t") {
					t.Errorf("password printed: %q", stderr.String())
				}
			}
		})
	}
}

// featureOf says which capability a scenario needs; scenarios missing here
// run on every database.
var featureOf = map[string]dialects.Feature{
	"for-update":     dialects.ForUpdate,
	"skip-locked":    dialects.SkipLocked,
	"advisory":       dialects.AdvisoryLock,
	"capacity":       dialects.CapacityHolds,
	"lease-sql":      dialects.LeaseTable,
	"fence":          dialects.LeaseTable,
	"fence-unfenced": dialects.LeaseTable,
	"election":       dialects.LeaseTable,
	"claim":          dialects.QueueClaim,
	// The SQLite writer-lock scenarios run on SQLite only.
	"sqlite-for-update":  dialects.WriterLock,
	"sqlite-skip-locked": dialects.WriterLock,
}

// withoutRedis is every check that runs without -redis.
func withoutRedis() map[string]bool {
	want := map[string]bool{}
	for _, c := range allChecks() {
		if !c.needsRedis {
			want[c.id] = true
		}
	}
	return want
}

// checkReport asserts the promise on one lockcheck JSON report:
// the baseline lost updates, every protected scenario lost none, and
// "not supported here" appears exactly where dialects says the database
// cannot do the mechanism, and the report has exactly the scenarios in want.
func checkReport(t *testing.T, rep report, d dialects.Dialect, want map[string]bool) {
	t.Helper()
	if !rep.OK {
		t.Errorf("report not OK")
	}
	missing := map[string]bool{}
	for id := range want {
		missing[id] = true
	}
	for _, o := range rep.Scenarios {
		if !want[o.ID] {
			t.Errorf("scenario %s should not have run", o.ID)
		}
		delete(missing, o.ID)
		t.Logf("%-12s %-20s %-28s %s", o.ID, o.Verdict, o.Observed, o.Unsupported)
		f, needs := featureOf[o.ID]
		switch {
		case o.Baseline:
			if o.Verdict != "baseline" || o.Lost == 0 {
				t.Errorf("%s: verdict %q, lost %d (%s); a baseline must show what it does not protect", o.ID, o.Verdict, o.Lost, o.Observed)
			}
		case needs && !d.Supports(f):
			if o.Verdict != "not supported here" || o.Unsupported == "" {
				t.Errorf("%s: verdict %q on %s, which cannot do %s; want \"not supported here\" with a reason", o.ID, o.Verdict, d, f)
			}
		default:
			if o.Verdict != "ok" || o.Lost != 0 || !o.OK || o.Ops == 0 {
				t.Errorf("%s: verdict %q, lost %d, ops %d (%s; %s); want ok, none lost", o.ID, o.Verdict, o.Lost, o.Ops, o.Observed, o.Error)
			}
		}
	}
	for id := range missing {
		t.Errorf("scenario %s missing from the report", id)
	}
}

// lockcheckOn runs lockcheck -json with small sizes and decodes its report.
// The baselines need no second chance: they hold every worker at a barrier
// between its read and its write, so each round loses by construction.
func lockcheckOn(t *testing.T, args ...string) report {
	t.Helper()
	base := append([]string{"-json", "-workers", "6", "-rounds", "6", "-prefix", testPrefix}, args...)
	code, stdout, stderr := runLockcheck(t, base...)
	var rep report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("-json output does not parse: %v\n%s\nstderr: %s", err, stdout, stderr)
	}
	if code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	return rep
}

func TestLockcheckSQLite(t *testing.T) {
	t.Parallel()
	// No -dsn: the default, a fresh SQLite WAL file in a temporary directory.
	rep := lockcheckOn(t)
	if !strings.Contains(rep.Database, "(temporary)") {
		t.Errorf("database %q: want the temporary SQLite file", rep.Database)
	}
	checkReport(t, rep, dialects.New("sqlite", ""), withoutRedis())
}

func TestLockcheckPostgres(t *testing.T) {
	t.Parallel()
	tg := testdb.Get(t, testdb.Postgres)
	// The harness's key=value DSN, as users of lib/pq and pgx write it.
	rep := lockcheckOn(t, "-dsn", tg.DSN)
	checkReport(t, rep, tg.Dialect, withoutRedis())
}

func TestLockcheckMySQL(t *testing.T) {
	t.Parallel()
	tg := testdb.Get(t, testdb.MySQL)
	rep := lockcheckOn(t, "-dsn", "mysql://"+tg.DSN)
	checkReport(t, rep, tg.Dialect, withoutRedis())
	if rep.Dialect != tg.Dialect.String() {
		t.Errorf("dialect %q, want %q", rep.Dialect, tg.Dialect)
	}
}

// TestLockcheckTiDB: every guarantee on TiDB, the MySQL look-alike (issue
// 14): what TiDB cannot do is "not supported here" with its reason, the
// rest lose nothing, and lockcheck exits 0.
func TestLockcheckTiDB(t *testing.T) {
	t.Parallel()
	tg := testdb.Get(t, testdb.TiDB)
	rep := lockcheckOn(t, "-dsn", "mysql://"+tg.DSN)
	checkReport(t, rep, tg.Dialect, withoutRedis())
	if tg.Dialect.Engine != dialects.TiDB || rep.Dialect != tg.Dialect.String() {
		t.Errorf("dialect %q (engine %v), want TiDB's %q", rep.Dialect, tg.Dialect.Engine, tg.Dialect)
	}
	unsupported := 0
	for _, o := range rep.Scenarios {
		if o.Unsupported != "" {
			unsupported++
		}
	}
	t.Logf("TiDB: %d of %d scenarios refused before any SQL", unsupported, len(rep.Scenarios))
}

func TestLockcheckRedis(t *testing.T) {
	t.Parallel()
	rep := lockcheckOn(t, "-redis", testdb.RedisAddr(t), "-only", "unprotected,lease-redis")
	checkReport(t, rep, dialects.New("sqlite", ""), map[string]bool{"unprotected": true, "lease-redis": true})
	if rep.Redis == "" {
		t.Error("report does not name the Redis it ran on")
	}
}

// TestTable checks the human-readable output on one quick scenario.
func TestTable(t *testing.T) {
	code, stdout, stderr := runLockcheck(t, "-only", "expr", "-workers", "2", "-rounds", "2", "-prefix", testPrefix)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"SCENARIO", "EXPECTED", "OBSERVED", "VERDICT", "OPS/S", "lost update / UPDATE n = n + 1", "Every guarantee held."} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "[1/1] lost update / UPDATE n = n + 1: ok") {
		t.Errorf("progress line missing: %q", stderr)
	}
	for _, l := range strings.Split(stdout, "\n") {
		if len([]rune(l)) > tableWidth {
			t.Errorf("line wider than %d: %q", tableWidth, l)
		}
	}
}
