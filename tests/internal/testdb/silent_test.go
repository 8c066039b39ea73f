package testdb

import (
	"net"
	"sync"
	"testing"
	"time"
)

// silentListener accepts TCP connections and never answers: a server stuck
// before its handshake. It returns the port.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestOpenSilentServer: opening a PostgreSQL or MySQL target on a port that
// accepts and never answers fails, instead of hanging the suite (GORM's
// MySQL dialector asks SELECT VERSION() with no deadline).
func TestOpenSilentServer(t *testing.T) {
	port := silentListener(t)
	for kind, dsn := range map[string]string{
		Postgres: "host=127.0.0.1 port=" + port + " user=postgres dbname=test sslmode=disable",
		MySQL:    "root:@tcp(127.0.0.1:" + port + ")/test?parseTime=true",
	} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			done := make(chan error, 1)
			go func() {
				tg, err := open(kind, dsn)
				if tg != nil {
					tg.closeAll()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("opened a server that never answers")
				}
				t.Log(err)
			case <-time.After(openTimeout + 5*time.Second):
				t.Fatalf("open still waiting after %v", openTimeout+5*time.Second)
			}
		})
	}
}
