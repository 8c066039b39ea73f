package servers

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	_ "github.com/go-sql-driver/mysql" // the "mysql" database/sql driver, to wait for readiness
)

// StartMariaDB starts a MariaDB of the test's own on a free port, root
// without a password over TCP and a database "test", with InnoDB's
// default durability (a commit is flushed to the log): after Kill and
// Restart it recovers every committed transaction. mariadb-install-db
// takes a few seconds. args are extra mariadbd options, e.g.
// "--performance-schema=ON".
func StartMariaDB(t testing.TB, args ...string) *Server {
	t.Helper()
	mariadbd, err := lookPath("mariadbd")
	if err != nil {
		missing(t, "mariadbd", err)
	}
	install, err := lookPath("mariadb-install-db")
	if err != nil {
		missing(t, "mariadb-install-db", err)
	}
	port := freePort(t)
	dir := dataDir(t, "mariadb", "mysql")
	data := filepath.Join(dir, "data")
	if err := run("mysql", install, "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve"); err != nil {
		t.Fatalf("servers: mariadb-install-db: %v", err)
	}
	s := &Server{
		Kind: "mariadb", Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir,
		DSN: fmt.Sprintf("root:@tcp(127.0.0.1:%d)/test?parseTime=true", port),
	}
	s.start = func() (*exec.Cmd, error) {
		base := []string{"--no-defaults",
			"--datadir=" + data, "--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
			"--socket=" + filepath.Join(dir, "mariadb.sock"), "--skip-name-resolve",
			"--innodb-buffer-pool-size=16M", "--skip-log-bin", "--pid-file=" + filepath.Join(dir, "mariadb.pid")}
		return command("mysql", filepath.Join(dir, "server.log"), mariadbd, append(base, args...)...)
	}
	first := true
	s.ready = func(ctx context.Context) error {
		if err := sqlPing(ctx, "mysql", fmt.Sprintf("root:@tcp(127.0.0.1:%d)/", port)); err != nil {
			return err
		}
		if first {
			first = false
			return sqlExec(ctx, "mysql", fmt.Sprintf("root:@tcp(127.0.0.1:%d)/", port), "CREATE DATABASE IF NOT EXISTS test")
		}
		return nil
	}
	return newServer(t, s)
}

func sqlExec(ctx context.Context, driver, dsn, q string) error {
	db, err := openDB(driver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, q)
	return err
}
