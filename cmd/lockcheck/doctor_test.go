package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/internal/testdb"
)

// walFile creates a SQLite file in WAL mode, as the application's DSN
// would leave it (doctor opens the file read-only and would report another
// journal mode), and returns it open, closed at the test's end, with its
// path.
func walFile(t *testing.T, name string) (*sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("PRAGMA journal_mode=WAL"); err != nil {
		t.Fatal(err)
	}
	return db, path
}

// doctorOn runs `lockcheck doctor -json args...` and returns its exit
// status and the IDs of its findings.
func doctorOn(t *testing.T, args ...string) (int, []string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runContext(context.Background(), append([]string{"doctor", "-json"}, args...), &out, &errOut)
	if code == exitUsage {
		t.Fatalf("doctor %v: exit 2: %s", args, errOut.String())
	}
	var fs []finding
	if err := json.Unmarshal(out.Bytes(), &fs); err != nil {
		t.Fatalf("doctor output %q: %v", out.String(), err)
	}
	ids := []string{}
	for _, f := range fs {
		ids = append(ids, f.ID)
		t.Logf("finding %s: %s (fix: %s)", f.ID, f.Problem, f.Fix)
	}
	return code, ids
}

func wantFindings(t *testing.T, code int, ids []string, want ...string) {
	t.Helper()
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("findings %v, want %v", ids, want)
	}
	wantCode := exitOK
	if len(want) > 0 {
		wantCode = exitViolated
	}
	if code != wantCode {
		t.Fatalf("exit %d, want %d", code, wantCode)
	}
}

// i17Table is a lease table that no other test creates, so that rows left
// by other packages' NoExpiry tests in the default table do not show.
const i17Table = "i17_doctor_leases"

func TestDoctorPostgresPlain(t *testing.T) {
	tg := testdb.Get(t, testdb.Postgres)
	code, ids := doctorOn(t, "-dsn", tg.DSN, "-lease-table", i17Table)
	wantFindings(t, code, ids)
}

func TestDoctorMySQLPlain(t *testing.T) {
	tg := testdb.Get(t, testdb.MySQL)
	code, ids := doctorOn(t, "-dsn", "mysql://"+tg.DSN, "-lease-table", i17Table)
	wantFindings(t, code, ids)
}

// TestDoctorPgBouncer starts Debian's pgbouncer in transaction mode in
// front of the test PostgreSQL: doctor reports the pooler. The same
// pgbouncer in session mode is no finding.
func TestDoctorPgBouncer(t *testing.T) {
	tg := testdb.Get(t, testdb.Postgres)
	for _, mode := range []string{"transaction", "session"} {
		t.Run(mode, func(t *testing.T) {
			port := startPgBouncer(t, tg.DSN, mode)
			dsn := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=test sslmode=disable", port)
			code, ids := doctorOn(t, "-dsn", dsn, "-lease-table", i17Table)
			if mode == "transaction" {
				wantFindings(t, code, ids, "pooler")
			} else {
				wantFindings(t, code, ids)
			}
		})
	}
}

func TestDoctorSQLite(t *testing.T) {
	dir := t.TempDir()
	// doctor examines only files that exist (it creates none). No WAL: an
	// empty file is a new database, in journal mode DELETE.
	for _, f := range []string{"nowal.db", "bare.db"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	noWAL := filepath.Join(dir, "nowal.db")
	code, ids := doctorOn(t, "-dsn", "sqlite:"+noWAL+"?_pragma=busy_timeout(5000)&_txlock=immediate")
	wantFindings(t, code, ids, "sqlite-wal")
	// Nothing right (the driver's own busy timeout turned off).
	code, ids = doctorOn(t, "-dsn", "sqlite:"+filepath.Join(dir, "bare.db")+"?_pragma=busy_timeout(0)")
	wantFindings(t, code, ids, "sqlite-wal", "sqlite-busy-timeout", "sqlite-txlock")
	// A WAL file, read with the driver's default busy timeout: nothing.
	good := sqliteFile(t, "wal")
	code, ids = doctorOn(t, "-dsn", "sqlite:"+good)
	wantFindings(t, code, ids)
	// A lease without expiry in the lease table.
	db, err := sql.Open("sqlite", good)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE TABLE " + i17Table + " (lock_name VARCHAR(191) NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL)",
		"INSERT INTO " + i17Table + " VALUES ('i17_forever', 'x', 0, 1), ('i17_ttl', 'y', 99999999999999, 2)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	code, ids = doctorOn(t, "-dsn", "sqlite:"+good, "-lease-table", i17Table)
	wantFindings(t, code, ids, "lease-no-expiry")
}

func TestRedisFindings(t *testing.T) {
	master := "# Persistence\r\naof_enabled:0\r\n# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=10.0.0.2,port=6379,state=online,offset=100,lag=7\r\n"
	var ids []string
	for _, f := range redisFindings(parseInfo(master), "") {
		ids = append(ids, f.ID)
	}
	if strings.Join(ids, ",") != "redis-persistence,redis-replica-lag" {
		t.Fatalf("findings %v", ids)
	}
	if fs := redisFindings(parseInfo("aof_enabled:1\r\nrole:master\r\nslave0:ip=a,lag=0\r\n"), ""); len(fs) != 0 {
		t.Fatalf("AOF, no lag: %v", fs)
	}
	if fs := redisFindings(parseInfo("aof_enabled:0\r\nrole:slave\r\n"), "3600 1"); len(fs) != 1 || fs[0].ID != "redis-replica" {
		t.Fatalf("replica with RDB: %v", fs)
	}
}

// startPgBouncer runs pgbouncer on a free port in front of the PostgreSQL
// of dsn, in pool mode mode, until the test ends. Without the binary the
// test skips, and under CI fails.
func startPgBouncer(t *testing.T, dsn, mode string) int {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin = "/usr/sbin/pgbouncer"
		if _, serr := os.Stat(bin); serr != nil {
			if testdb.CI() {
				t.Fatal("pgbouncer is not installed (Debian package pgbouncer); CI must have it")
			}
			t.Skip("pgbouncer is not installed (apt-get install pgbouncer)")
		}
	}
	host, pgPort := "127.0.0.1", "5432"
	if m := regexp.MustCompile(`host=(\S+)`).FindStringSubmatch(dsn); m != nil {
		host = m[1]
	}
	if m := regexp.MustCompile(`port=(\d+)`).FindStringSubmatch(dsn); m != nil {
		pgPort = m[1]
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// pgbouncer refuses to run as root: as root it runs as postgres, which
	// must be able to read the directory.
	dir, err := os.MkdirTemp("", "i17_pgbouncer_")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	ini := fmt.Sprintf(`[databases]
test = host=%s port=%s dbname=test user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = %s
default_pool_size = 4
max_client_conn = 50
ignore_startup_parameters = extra_float_digits,options
logfile = %s/pgbouncer.log
`, host, pgPort, port, mode, dir)
	cfg := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(cfg, []byte(ini), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{cfg}
	if os.Geteuid() == 0 {
		args = []string{"-u", "postgres", cfg}
	}
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return port
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			t.Fatalf("pgbouncer did not listen on %d: %s %s", port, out.String(), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
