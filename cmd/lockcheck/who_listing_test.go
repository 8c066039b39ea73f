package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/cmd/lockcheck/internal/testdb"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/lease"
)

// localHolderEnv makes the test binary a separate process that holds a
// local lease in the directory it names (the name in
// LOCKCHECK_TEST_HOLD_LOCAL_NAME). It prints "fence N" and holds the lease
// until its stdin closes.
const localHolderEnv = "LOCKCHECK_TEST_HOLD_LOCAL"

func init() {
	v := os.Getenv(localHolderEnv)
	if v == "" {
		return
	}
	dir, name := v, os.Getenv(localHolderEnv+"_NAME")
	s, err := lease.NewLocalStore(dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	l, err := lease.NewManager(s).Acquire(context.Background(), name)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("fence", l.Fence())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent lets go
	os.Exit(0)
}

// whoFull runs `who -json` and returns the rows and stderr.
func whoFull(t *testing.T, args ...string) ([]holding, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := runContext(context.Background(), append([]string{"who", "-json"}, args...), &out, &errOut); code != exitOK {
		t.Fatalf("who %v: exit %d: %s", args, code, errOut.String())
	}
	var rows []holding
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("who output %q: %v", out.String(), err)
	}
	return rows, errOut.String()
}

// TestWhoLocal: a lease held by another process in a local store's
// directory is listed with that process's pid and its fence, under its
// name when -name gives it, else under its hash; once the process ends,
// nothing is listed.
func TestWhoLocal(t *testing.T) {
	dir := t.TempDir()
	name := "i17-local-job"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), localHolderEnv+"="+dir, localHolderEnv+"_NAME="+name)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "fence ") {
		t.Fatalf("holder process: %q, %v", line, err)
	}
	fence, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "fence ")), 10, 64)

	rows, _ := whoFull(t, "-local", dir, "-name", name)
	t.Logf("who -local: %+v", rows)
	if len(rows) != 1 || rows[0].Mechanism != "lease-local" || rows[0].Name != name || rows[0].Fence != fence {
		t.Fatalf("rows %+v, want %s with fence %d", rows, name, fence)
	}
	if _, err := os.Stat("/proc/locks"); err == nil {
		if want := fmt.Sprintf("pid %d", cmd.Process.Pid); rows[0].Holder != want || rows[0].Source != srcProcLocks {
			t.Fatalf("holder %q from %q, want %q from /proc/locks", rows[0].Holder, rows[0].Source, want)
		}
	}
	rows, _ = whoFull(t, "-local", dir)
	if len(rows) != 1 || !strings.HasPrefix(rows[0].Name, "sha256:") {
		t.Fatalf("without -name: %+v, want the hash", rows)
	}
	_ = stdin.Close()
	_ = cmd.Wait()
	if rows, _ = whoFull(t, "-local", dir, "-name", name); len(rows) != 0 {
		t.Fatalf("after the holder ended: %+v", rows)
	}
	var errOut bytes.Buffer
	if code := runContext(context.Background(), []string{"who", "-local", dir + "/missing"}, &bytes.Buffer{}, &errOut); code != exitUsage {
		t.Fatalf("a missing -local directory: exit %d (%s)", code, errOut.String())
	}
	if _, err := os.Stat(dir + "/missing"); err == nil {
		t.Fatal("who -local created the directory it was asked to list")
	}
}

// TestWhoForceReleaseHold: `who -force-release table/id` ends a hold held
// by another pool; the stale holder's Extend and Release return
// holds.ErrLost, and the slot is free at once. -holder limits it.
func TestWhoForceReleaseHold(t *testing.T) {
	for _, kind := range []string{testdb.Postgres, testdb.MySQL} {
		t.Run(kind, func(t *testing.T) {
			tg := testdb.Get(t, kind)
			holder := testdb.Open(t, kind, nil)
			ctx := context.Background()
			_ = holder.DB.Migrator().DropTable(&i17WhoSeat{}, "i17_whof_holds")
			if err := holder.DB.AutoMigrate(&i17WhoSeat{}); err != nil {
				t.Fatal(err)
			}
			in := holds.Table("i17_whof_holds")
			if err := holds.Migrate(holder.DB, in); err != nil {
				t.Fatal(err)
			}
			// An empty lease table: who refuses a -lease-table that is not
			// there, and the default one may hold other tests' leases.
			if err := holder.DB.Exec("CREATE TABLE IF NOT EXISTS i17_whof_none (lock_name VARCHAR(191) NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL)").Error; err != nil {
				t.Fatal(err)
			}
			seat := i17WhoSeat{Capacity: 2}
			holder.DB.Create(&seat)
			alice, err := holds.Acquire(ctx, holder.DB, &seat, "alice", in)
			if err != nil {
				t.Fatal(err)
			}
			bob, err := holds.Acquire(ctx, holder.DB, &seat, "bob", in)
			if err != nil {
				t.Fatal(err)
			}
			dsn := tg.DSN
			if kind == testdb.MySQL {
				dsn = "mysql://" + dsn
			}
			res := "i17_who_seats/" + itoa(seat.ID)
			base := []string{"-dsn", dsn, "-lease-table", "i17_whof_none", "-holds-table", "i17_whof_holds"}
			rows, stderr := whoFull(t, append(base, "-force-release", res, "-holder", "alice")...)
			if !strings.Contains(stderr, "ended 1 hold(s)") {
				t.Fatalf("stderr %q", stderr)
			}
			if r := find(rows, "hold", res); r == nil || r.Holder != "bob" || len(rows) != 1 {
				t.Fatalf("after force-releasing alice: %+v, want bob's hold only", rows)
			}
			if err := alice.Extend(ctx, time.Minute); !errors.Is(err, holds.ErrLost) {
				t.Fatalf("stale holder's Extend: %v, want ErrLost", err)
			}
			if err := alice.Release(ctx); !errors.Is(err, holds.ErrLost) {
				t.Fatalf("stale holder's Release: %v, want ErrLost", err)
			}
			carol, err := holds.Acquire(ctx, holder.DB, &seat, "carol", in)
			if err != nil {
				t.Fatalf("the force-released slot is not free: %v", err)
			}
			rows, stderr = whoFull(t, append(base, "-force-release", res)...)
			if !strings.Contains(stderr, "ended 2 hold(s)") || find(rows, "hold", res) != nil {
				t.Fatalf("force-release of the resource: %q, rows %+v", stderr, rows)
			}
			for _, h := range []*holds.Hold{bob, carol} {
				if err := h.Release(ctx); !errors.Is(err, holds.ErrLost) {
					t.Fatalf("%s's Release: %v, want ErrLost", h.Holder, err)
				}
			}
		})
	}
}

// TestWhoAdvisorySQL: the statements `who` reads advisory locks with, and
// how an application lock's resource_description is read.
func TestWhoAdvisorySQL(t *testing.T) {
	want := map[string]string{
		"sqlserver": `SELECT l.resource_description, l.request_session_id, l.request_mode, l.request_owner_type, COALESCE(s.program_name, N''), COALESCE(s.host_name, N'')
FROM sys.dm_tran_locks l LEFT JOIN sys.dm_exec_sessions s ON s.session_id = l.request_session_id
WHERE l.resource_type = 'APPLICATION' AND l.request_status = 'GRANT' AND l.resource_database_id = DB_ID()
ORDER BY l.resource_description, l.request_session_id`,
		"mysql": `SELECT m.OBJECT_NAME, t.PROCESSLIST_ID, COALESCE(t.PROCESSLIST_USER, ''), COALESCE(t.PROCESSLIST_HOST, '')
FROM performance_schema.metadata_locks m JOIN performance_schema.threads t ON t.THREAD_ID = m.OWNER_THREAD_ID
WHERE m.OBJECT_TYPE = 'USER LEVEL LOCK' AND m.LOCK_STATUS = 'GRANTED'
ORDER BY m.OBJECT_NAME, t.PROCESSLIST_ID`,
		"mysql ready": `SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE NAME = 'wait/lock/metadata/sql/mdl' AND ENABLED = 'YES'`,
	}
	got := map[string]string{"sqlserver": sqlServerAppLocksSQL, "mysql": mysqlUserLocksSQL, "mysql ready": mysqlPerfSchemaReadySQL}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], w)
		}
	}
	long := strings.Repeat("x", 40)
	for _, c := range []struct{ desc, want string }{
		{"0:[i17-job]:(8a1c3f2e)", "i17-job"},
		{"0:[a]:b]:(1234abcd)", "a]:b"},
		{"0:[" + long[:32] + "]:(00ff00ff)", long},
		{"0:[" + strings.Repeat("y", 32) + "]:(00ff00ff)", strings.Repeat("y", 32) + "..."},
		{"odd", "odd"},
	} {
		if got := appLockName(c.desc, []string{"i17-job", long}); got != c.want {
			t.Errorf("appLockName(%q) = %q, want %q", c.desc, got, c.want)
		}
	}
}

// TestWhoSQLServer: an application lock held by another pool is listed
// from sys.dm_tran_locks (where LOCKPLUGIN_SQLSERVER_DSN is set).
func TestWhoSQLServer(t *testing.T) {
	tg := testdb.Get(t, testdb.SQLServer)
	holder := testdb.Open(t, testdb.SQLServer, nil)
	ctx := context.Background()
	name := testdb.Unique(t, "i17_who_ms")
	a, err := advisory.Acquire(ctx, holder.DB, name)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(ctx)
	rows, stderr := whoFull(t, "-dsn", tg.DSN, "-name", name)
	if r := find(rows, "advisory", name); r == nil || r.Source != srcDmTranLocks || !strings.HasPrefix(r.Holder, "session ") {
		t.Fatalf("rows %+v (%s), want %s from sys.dm_tran_locks", rows, stderr, name)
	}
}
