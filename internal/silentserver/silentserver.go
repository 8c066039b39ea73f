// Package silentserver is a test aid shared by the test suites of
// lockplugin's modules (tests/ and cmd/lockcheck): a TCP server that
// accepts connections and never sends a byte, as a port where something
// that is not the database listens, or a server stuck before its handshake.
package silentserver

import (
	"net"
	"sync"
	"testing"
)

// Start listens on a free port of 127.0.0.1, accepts every connection and
// answers none, until the test ends. It returns the address (host:port).
func Start(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
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
	tb.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}
