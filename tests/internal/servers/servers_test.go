package servers

import (
	"context"
	"database/sql"
	"net"
	"testing"
	"time"
)

func TestRedisRestartsEmpty(t *testing.T) {
	s := StartRedis(t)
	ctx := context.Background()
	if err := redisPing(ctx, s.Addr); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if err := redisPing(ctx, s.Addr); err == nil {
		t.Fatal("a killed Redis answered")
	}
	s.Restart()
	if err := redisPing(ctx, s.Addr); err != nil {
		t.Fatal(err)
	}
}

func testSQL(t *testing.T, s *Server, driver string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open(driver, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE i10_kept (n INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO i10_kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if err := db.PingContext(ctx); err == nil {
		t.Fatal("a killed server answered")
	}
	start := time.Now()
	s.Restart()
	t.Logf("%s restarted in %v", s.Kind, time.Since(start).Round(time.Millisecond))
	var n int
	if err := db.QueryRowContext(ctx, "SELECT n FROM i10_kept").Scan(&n); err != nil || n != 42 {
		t.Fatalf("after the restart: n=%d err=%v, want the committed row", n, err)
	}
}

func TestPostgresRecoversAfterKill(t *testing.T) {
	start := time.Now()
	s := StartPostgres(t)
	t.Logf("started in %v", time.Since(start).Round(time.Millisecond))
	testSQL(t, s, "pgx")
}

func TestMariaDBRecoversAfterKill(t *testing.T) {
	start := time.Now()
	s := StartMariaDB(t)
	t.Logf("started in %v", time.Since(start).Round(time.Millisecond))
	testSQL(t, s, "mysql")
}

// TestProbesBounded: the readiness probes give up on a port that accepts
// and never answers, within their context: the drivers' handshakes and the
// Redis PING honour it.
func TestProbesBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // never answered
		}
	}()
	defer ln.Close()
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	for name, probe := range map[string]func(context.Context) error{
		"postgres": func(ctx context.Context) error {
			return sqlPing(ctx, "pgx", "host=127.0.0.1 port="+port+" user=postgres dbname=test sslmode=disable")
		},
		"mariadb": func(ctx context.Context) error { return sqlPing(ctx, "mysql", "root:@tcp("+addr+")/") },
		"redis":   func(ctx context.Context) error { return redisPing(ctx, addr) },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		done := make(chan error, 1)
		go func() { done <- probe(ctx) }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: the probe passed on a silent server", name)
			}
		case <-time.After(probeTimeout + 10*time.Second):
			t.Errorf("%s: the probe ignored its context", name)
		}
		cancel()
	}
}
