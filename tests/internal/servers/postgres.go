package servers

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, to wait for readiness
)

// StartPostgres starts a PostgreSQL of the test's own on a free port,
// with trust authentication for user postgres and the default durability
// settings (fsync and synchronous_commit on): after Kill (SIGKILL of the
// postmaster and its backends) and Restart it recovers every committed
// transaction. initdb takes about 2 s.
func StartPostgres(t testing.TB) *Server {
	t.Helper()
	initdb, err := pgBin("initdb")
	if err != nil {
		missing(t, "PostgreSQL's initdb", err)
	}
	postgres, err := pgBin("postgres")
	if err != nil {
		missing(t, "PostgreSQL's postgres", err)
	}
	port := freePort(t)
	dir := dataDir(t, "postgres", "postgres")
	data := filepath.Join(dir, "data")
	if err := run("postgres", initdb, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		t.Fatalf("servers: initdb: %v", err)
	}
	s := &Server{
		Kind: "postgres", Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir,
		DSN: fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", port),
	}
	s.start = func() (*exec.Cmd, error) {
		return command("postgres", filepath.Join(dir, "server.log"), postgres,
			"-D", data, "-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1",
			"-c", "max_connections=50", "-c", "shared_buffers=16MB")
	}
	s.ready = func(ctx context.Context) error { return sqlPing(ctx, "pgx", s.DSN) }
	return newServer(t, s)
}

// sqlPing opens dsn and pings it once.
func sqlPing(ctx context.Context, driver, dsn string) error {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

func openDB(driver, dsn string) (*sql.DB, error) { return sql.Open(driver, dsn) }
