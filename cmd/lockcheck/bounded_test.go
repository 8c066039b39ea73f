package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"github.com/lockplugin/lockplugin/internal/silentserver"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// silentListener is a port where something that is not the database
// listens and never answers (silentserver.Start).
func silentListener(t *testing.T) string { return silentserver.Start(t) }

// issueBound is issue 28's promise: an unreachable or silent server gives
// exit 2 within 15 s.
const issueBound = 15 * time.Second

// TestSilentServer: lockcheck, doctor and who on a PostgreSQL and a MySQL
// DSN whose port accepts and never answers each exit 2 with one line that
// names the database, before issueBound. Before the open was bounded, the
// MySQL runs were still waiting at 45 s (GORM's SELECT VERSION() inside
// gorm.Open has no deadline).
func TestSilentServer(t *testing.T) {
	addr := silentListener(t)
	host, port, _ := net.SplitHostPort(addr)
	dsns := map[string]string{
		"postgres":             "postgres://app:s3cr3t-pw@" + addr + "/test?sslmode=disable",
		"postgres-tls":         "postgres://app:s3cr3t-pw@" + addr + "/test?sslmode=require",
		"postgres-keyvalue":    "host=" + host + " port=" + port + " user=app password=s3cr3t-pw dbname=test sslmode=disable",
		"mysql":                "mysql://app:s3cr3t-pw@tcp(" + addr + ")/test",
		"mysql-timeout-2s":     "mysql://app:s3cr3t-pw@tcp(" + addr + ")/test",
		"postgres-timeout-2s":  "postgres://app:s3cr3t-pw@" + addr + "/test?sslmode=disable",
		"mysql-own-dial-limit": "mysql://app:s3cr3t-pw@tcp(" + addr + ")/test?timeout=30s",
	}
	for name, dsn := range dsns {
		for _, cmd := range [][]string{{"-only", "expr", "-prefix", testPrefix}, {"doctor"}, {"who"}} {
			t.Run(name+"/"+cmd[0], func(t *testing.T) {
				t.Parallel()
				args := append([]string{}, cmd...)
				if cmd[0] == "-only" {
					args = nil
				}
				args = append(args, "-dsn", dsn)
				if cmd[0] == "-only" {
					args = append(args, cmd...)
				}
				if strings.HasSuffix(name, "-2s") {
					args = append(args, "-timeout", "2s")
				}
				type result struct {
					code           int
					stdout, stderr string
				}
				done := make(chan result, 1)
				go func() {
					var out, errOut bytes.Buffer
					code := runContext(context.Background(), args, &out, &errOut)
					done <- result{code, out.String(), errOut.String()}
				}()
				select {
				case r := <-done:
					if r.code != exitUsage {
						t.Fatalf("exit %d, want %d; stdout %q stderr %q", r.code, exitUsage, r.stdout, r.stderr)
					}
					lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
					if len(lines) != 1 || !strings.HasPrefix(lines[0], "lockcheck") || !strings.Contains(lines[0], addr) {
						t.Fatalf("want one line naming the server %s, got %q", addr, r.stderr)
					}
					if strings.Contains(r.stderr, "s3cr3t") {
						t.Fatalf("password printed: %q", r.stderr)
					}
					t.Log(lines[0])
				case <-time.After(issueBound):
					t.Fatalf("lockcheck %v still running after %v", args, issueBound)
				}
			})
		}
	}
}

// TestOpenDatabaseTimeoutMessage: the -timeout, when smaller than the open
// bound, is the one the message names.
func TestOpenDatabaseTimeoutMessage(t *testing.T) {
	addr := silentListener(t)
	d, err := parseDSN("mysql://app@tcp(" + addr + ")/test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = openDatabase(ctx, d)
	if err == nil || !strings.Contains(err.Error(), "no answer from mysql") || !strings.Contains(err.Error(), "within 1s") {
		t.Fatalf("err %v, want no answer within 1s", err)
	}
}

// sqliteFile makes a SQLite file in journal mode mode with one table, and
// returns its path.
func sqliteFile(t *testing.T, mode string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode("+mode+")")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE i28_items (id INTEGER PRIMARY KEY, name TEXT)"); err != nil {
		t.Fatal(err)
	}
	if got := journalMode(t, path); got != mode {
		t.Fatalf("made a %s file, want %s", got, mode)
	}
	return path
}

func journalMode(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	return mode
}

// dirDigest is the names and contents of every file in dir.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(e.Name() + "\x00"))
		h.Write(b)
	}
	return string(h.Sum(nil))
}

// TestDoctorLeavesDeleteModeAlone: the README's form, doctor -dsn
// sqlite:PATH, on a file in delete journal mode reports it (exit 1, the
// finding says WAL) and leaves it as it was: still in delete mode, not a
// byte changed, no file added. It used to open the file with lockcheck's
// own pragmas, switch it to WAL and report nothing.
func TestDoctorLeavesDeleteModeAlone(t *testing.T) {
	path := sqliteFile(t, "delete")
	before := dirDigest(t, filepath.Dir(path))
	var out, errOut bytes.Buffer
	code := runContext(context.Background(), []string{"doctor", "-dsn", "sqlite:" + path}, &out, &errOut)
	if code != exitViolated {
		t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, exitViolated, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "[sqlite-wal]") || !strings.Contains(out.String(), "WAL") {
		t.Fatalf("no WAL finding: %s", out.String())
	}
	if got := journalMode(t, path); got != "delete" {
		t.Fatalf("doctor left the file in %s mode", got)
	}
	if dirDigest(t, filepath.Dir(path)) != before {
		t.Fatal("doctor changed the directory of the file it examined")
	}
	// who only lists, and writes nothing either.
	code = runContext(context.Background(), []string{"who", "-dsn", "sqlite:" + path}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("who: exit %d: %s", code, errOut.String())
	}
	if dirDigest(t, filepath.Dir(path)) != before {
		t.Fatal("who changed the directory of the file it examined")
	}
}

// TestDoctorWALFileReadOnly: a WAL file lockcheck's way is no finding, when
// opened read-only too.
func TestDoctorWALFileReadOnly(t *testing.T) {
	path := sqliteFile(t, "wal")
	code, ids := doctorOn(t, "-dsn", "sqlite:"+path)
	wantFindings(t, code, ids)
	if got := journalMode(t, path); got != "wal" {
		t.Fatalf("journal mode %s after doctor", got)
	}
}

// TestMissingSQLitePath: doctor and who on a misspelt path exit 2 naming
// it, and create nothing (opening it read-write would have made a new,
// empty database there, and doctor would have judged that).
func TestMissingSQLitePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "misspelt.db")
	for _, cmd := range []string{"doctor", "who"} {
		for _, dsn := range []string{"sqlite:" + path, "sqlite:" + path + "?_pragma=busy_timeout(5000)"} {
			var out, errOut bytes.Buffer
			code := runContext(context.Background(), []string{cmd, "-dsn", dsn}, &out, &errOut)
			if code != exitUsage {
				t.Fatalf("%s %s: exit %d, want %d; %s", cmd, dsn, code, exitUsage, errOut.String())
			}
			if !strings.Contains(errOut.String(), path) {
				t.Fatalf("%s: the message does not name the path: %q", cmd, errOut.String())
			}
			if es, _ := os.ReadDir(dir); len(es) != 0 {
				t.Fatalf("%s %s created %v", cmd, dsn, es)
			}
		}
	}
}

// TestWhoMissingTable: a table named on the command line that is not there
// is an error naming it, not an empty listing.
func TestWhoMissingTable(t *testing.T) {
	path := sqliteFile(t, "wal")
	for _, flag := range []string{"-holds-table", "-lease-table"} {
		var out, errOut bytes.Buffer
		code := runContext(context.Background(), []string{"who", "-dsn", "sqlite:" + path, flag, "i28_no_such_table"}, &out, &errOut)
		if code == exitOK {
			t.Fatalf("%s: exit 0; stdout %q", flag, out.String())
		}
		if !strings.Contains(errOut.String(), "i28_no_such_table") || !strings.Contains(errOut.String(), flag) {
			t.Fatalf("%s: the message does not name the table: %q", flag, errOut.String())
		}
	}
	// The defaults missing is no error: the application may use neither.
	var out, errOut bytes.Buffer
	if code := runContext(context.Background(), []string{"who", "-dsn", "sqlite:" + path}, &out, &errOut); code != exitOK {
		t.Fatalf("who with default tables: exit %d: %s", code, errOut.String())
	}
}

// TestWriteTableFits: long cells wrap so that no line is over tableWidth;
// with -wide each row stays on one line; nothing of a cell is lost.
func TestWriteTableFits(t *testing.T) {
	long := strings.Repeat("observed value ", 12)
	rows := [][]string{
		{"SCENARIO", "EXPECTED", "OBSERVED", "VERDICT", "OPS/S"},
		{"lost update / UPDATE n = n + 1", "0 lost updates", long, "ok", "1234"},
		{"x", strings.Repeat("unbroken", 20), "short", "VIOLATED", "-"},
	}
	var b bytes.Buffer
	writeTable(&b, rows, tableWidth)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > tableWidth {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	if len(lines) <= len(rows) {
		t.Errorf("nothing wrapped:\n%s", b.String())
	}
	flat := strings.Join(strings.Fields(b.String()), "")
	for _, r := range rows {
		for _, c := range r {
			for _, w := range strings.Fields(c) {
				if !strings.Contains(flat, w[:min(len(w), 20)]) {
					t.Errorf("cell text %q lost", w)
				}
			}
		}
	}
	b.Reset()
	writeTable(&b, rows, tableWidthFor(true))
	if n := strings.Count(b.String(), "\n"); n != len(rows) {
		t.Errorf("-wide printed %d lines for %d rows", n, len(rows))
	}
}
