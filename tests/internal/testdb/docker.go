package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ory/dockertest/v3"
	"github.com/redis/go-redis/v9"

	// The drivers register themselves for the readiness checks.
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// Containers are left to dockertest's expiry rather than purged at exit:
// test binaries of several packages share them while they run.
const containerLifetime = 15 * 60 // seconds

// startContainer starts kind ("postgres", "mysql" or "redis") in Docker when
// an engine answers, and returns a DSN (an address for redis) for it.
func startContainer(kind string) (string, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return "", err
	}
	if err := pool.Client.Ping(); err != nil {
		return "", fmt.Errorf("no Docker engine: %w", err)
	}
	pool.MaxWait = 2 * time.Minute
	var opts dockertest.RunOptions
	var dsn func(port string) string
	switch kind {
	case Postgres:
		opts = dockertest.RunOptions{Repository: "postgres", Tag: "16", Env: []string{"POSTGRES_HOST_AUTH_METHOD=trust", "POSTGRES_DB=test"}}
		dsn = func(p string) string {
			return "host=127.0.0.1 port=" + p + " user=postgres dbname=test sslmode=disable"
		}
	case MySQL:
		opts = dockertest.RunOptions{Repository: "mariadb", Tag: "11", Env: []string{"MARIADB_ALLOW_EMPTY_ROOT_PASSWORD=1", "MARIADB_DATABASE=test"}}
		dsn = func(p string) string { return "root:@tcp(127.0.0.1:" + p + ")/test?parseTime=true" }
	case "redis":
		opts = dockertest.RunOptions{Repository: "redis", Tag: "7"}
		dsn = func(p string) string { return "127.0.0.1:" + p }
	default:
		return "", errors.New("no container for " + kind)
	}
	res, err := pool.RunWithOptions(&opts)
	if err != nil {
		return "", err
	}
	_ = res.Expire(containerLifetime)
	port := map[string]string{Postgres: "5432/tcp", MySQL: "3306/tcp", "redis": "6379/tcp"}[kind]
	out := dsn(res.GetPort(port))
	err = pool.Retry(func() error { return ping(kind, out) })
	if err != nil {
		_ = pool.Purge(res)
		return "", err
	}
	return out, nil
}

func ping(kind, dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	switch kind {
	case "redis":
		c := redis.NewClient(&redis.Options{Addr: dsn})
		defer c.Close()
		return c.Ping(ctx).Err()
	case Postgres, MySQL:
		driver := map[string]string{Postgres: "pgx", MySQL: "mysql"}[kind]
		db, err := sql.Open(driver, dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		return db.PingContext(ctx)
	}
	c, err := net.DialTimeout("tcp", dsn, time.Second)
	if err == nil {
		c.Close()
	}
	return err
}
