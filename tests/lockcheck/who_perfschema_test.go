// Package lockcheck_test runs the lockcheck command, built from
// cmd/lockcheck, where a test needs a server of its own: those are started
// by tests/internal/servers, the one harness that starts servers.
package lockcheck_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// holding is the part of `lockcheck who -json`'s rows these tests read.
type holding struct {
	Mechanism string `json:"mechanism"`
	Name      string `json:"name"`
	Holder    string `json:"holder"`
	Source    string `json:"source"`
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// lockcheckBinary builds cmd/lockcheck once per test binary.
func lockcheckBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lockcheck-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "lockcheck")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/lockplugin/lockplugin/cmd/lockcheck").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build cmd/lockcheck: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// who runs `lockcheck who -json args...` and decodes its rows.
func who(t *testing.T, args ...string) ([]holding, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(lockcheckBinary(t), append([]string{"who", "-json"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("lockcheck who %v: %v: %s", args, err, errOut.String())
	}
	var rows []holding
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("who output %q: %v", out.String(), err)
	}
	return rows, errOut.String()
}

func find(rows []holding, mechanism, name string) *holding {
	for i := range rows {
		if rows[i].Mechanism == mechanism && rows[i].Name == name {
			return &rows[i]
		}
	}
	return nil
}

const (
	srcPerfSchema = "performance_schema.metadata_locks"
	srcIsUsedLock = "IS_USED_LOCK"
)

// TestWhoPerfSchema: on a MariaDB of the test's own with performance_schema
// instrumenting metadata locks, `who` lists named locks held by other
// sessions without being given their names (one through advisory.Acquire,
// one a raw GET_LOCK), with the holder's connection id, and says where it
// read them. On the shared server (performance_schema off) it falls back
// to IS_USED_LOCK for the -name locks, and says so.
func TestWhoPerfSchema(t *testing.T) {
	srv := servers.StartMariaDB(t, "--performance-schema=ON", "--performance-schema-instrument=wait/lock/metadata/sql/mdl=ON")
	holder, err := gorm.Open(testdb.Dialector(testdb.MySQL, srv.DSN), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	hs, _ := holder.DB()
	defer hs.Close()
	ctx := context.Background()
	a, err := advisory.Acquire(ctx, holder, "i17-ps-one")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(ctx)
	raw, err := sql.Open("mysql", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var got, id int64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK('i17-ps-two', 0), CONNECTION_ID()").Scan(&got, &id); err != nil || got != 1 {
		t.Fatalf("GET_LOCK: %d, %v", got, err)
	}
	// The server is the test's own: the default lease and holds tables do
	// not exist there, and who says nothing of a default table it cannot find.
	rows, stderr := who(t, "-dsn", "mysql://"+srv.DSN)
	t.Logf("who: %+v; %s", rows, stderr)
	one, two := find(rows, "advisory", "i17-ps-one"), find(rows, "advisory", "i17-ps-two")
	if one == nil || two == nil || one.Source != srcPerfSchema || !strings.HasPrefix(two.Holder, fmt.Sprintf("connection %d ", id)) {
		t.Fatalf("rows %+v, want both locks from metadata_locks, i17-ps-two on connection %d", rows, id)
	}
	if !strings.Contains(stderr, "advisory locks read from "+srcPerfSchema) {
		t.Fatalf("stderr %q does not say where the locks were read", stderr)
	}

	tg := testdb.Get(t, testdb.MySQL)
	sh := testdb.Open(t, testdb.MySQL, nil)
	b, err := advisory.Acquire(ctx, sh.DB, "i17-ps-shared")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release(ctx)
	rows, stderr = who(t, "-dsn", "mysql://"+tg.DSN, "-name", "i17-ps-shared") // other rows of the shared tables are passed over by find
	var ps int
	if err := tg.SQL.QueryRow("SELECT @@performance_schema").Scan(&ps); err != nil {
		t.Fatal(err)
	}
	if ps != 1 {
		if r := find(rows, "advisory", "i17-ps-shared"); r == nil || r.Source != srcIsUsedLock || !strings.Contains(stderr, srcIsUsedLock+" (performance_schema off") {
			t.Fatalf("fallback: rows %+v, stderr %q", rows, stderr)
		}
	}
}
