package servers

import (
	"context"
	"database/sql"
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
