package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echo starts a server that answers each line with "+<line>\r\n" (a RESP
// simple string) and counts the lines it got.
func echo(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var got atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					got.Add(1)
					_, _ = io.WriteString(c, "+"+strings.TrimSpace(line)+"\r\n")
				}
			}()
		}
	}()
	return ln.Addr().String(), &got
}

// ask sends line and returns the reply, or an error after timeout.
func ask(c net.Conn, r *bufio.Reader, line string, timeout time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, line+"\r\n"); err != nil {
		return "", err
	}
	s, err := r.ReadString('\n')
	return strings.TrimSpace(s), err
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, bufio.NewReader(c)
}

func TestForwardsDelaysAndDropsOneReply(t *testing.T) {
	addr, got := echo(t)
	p := Start(t, addr, RESP())
	c, r := dial(t, p.Addr())
	if s, err := ask(c, r, "PING", time.Second); err != nil || s != "+PING" {
		t.Fatalf("through the proxy: %q %v", s, err)
	}
	p.SetDelay(0, 150*time.Millisecond)
	start := time.Now()
	if s, err := ask(c, r, "SLOW", time.Second); err != nil || s != "+SLOW" {
		t.Fatalf("delayed: %q %v", s, err)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("a 150 ms reply delay answered in %v", el)
	}
	p.SetDelay(0, 0)

	p.DropReplyTo(2) // the second command from now, on any connection
	if s, err := ask(c, r, "ONE", time.Second); err != nil || s != "+ONE" {
		t.Fatalf("first command: %q %v", s, err)
	}
	before := got.Load()
	if s, err := ask(c, r, "TWO", 300*time.Millisecond); err == nil {
		t.Fatalf("the dropped reply arrived: %q", s)
	}
	if got.Load() != before+1 || p.DroppedReplies() != 1 {
		t.Fatalf("the server must get the command (%d) and only its reply be dropped (%d)", got.Load()-before, p.DroppedReplies())
	}
	c2, r2 := dial(t, p.Addr())
	if s, err := ask(c2, r2, "THREE", time.Second); err != nil || s != "+THREE" {
		t.Fatalf("a new connection after the drop: %q %v", s, err)
	}
}

func TestBlackholeHoldsAndHeals(t *testing.T) {
	addr, got := echo(t)
	p := Start(t, addr)
	c, r := dial(t, p.Addr())
	if _, err := ask(c, r, "A", time.Second); err != nil {
		t.Fatal(err)
	}
	p.Blackhole(true)
	before := got.Load()
	_, err := ask(c, r, "B", 200*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("blackholed: got %v, want a timeout (no reset, no answer)", err)
	}
	if got.Load() != before {
		t.Fatal("a blackholed command reached the server")
	}
	// A new connection is accepted and held too.
	c2, r2 := dial(t, p.Addr())
	if _, err := ask(c2, r2, "C", 200*time.Millisecond); err == nil {
		t.Fatal("a new connection got through the blackhole")
	}
	p.Blackhole(false)
	_ = c2.SetDeadline(time.Now().Add(time.Second))
	if s, err := r2.ReadString('\n'); err != nil || strings.TrimSpace(s) != "+C" {
		t.Fatalf("after healing: %q %v", s, err)
	}
}

func TestResetAndDropAfterWrite(t *testing.T) {
	addr, got := echo(t)
	p := Start(t, addr)
	c, r := dial(t, p.Addr())
	if _, err := ask(c, r, "A", time.Second); err != nil {
		t.Fatal(err)
	}
	p.Reset()
	_, err := ask(c, r, "B", time.Second)
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("after Reset: %v, want a connection error", err)
	}
	c2, r2 := dial(t, p.Addr())
	p.DropAfterWrite(1)
	before := got.Load()
	if _, err := ask(c2, r2, "D", 300*time.Millisecond); err == nil {
		t.Fatal("a reply came after DropAfterWrite")
	}
	if got.Load() != before+1 {
		t.Fatal("the write did not reach the server")
	}
}
