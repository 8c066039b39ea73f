package servers

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// StartRedis starts a Redis of the test's own on a free port, without
// persistence (no RDB snapshots, no AOF): after Kill and Restart it is
// empty, as a Redis restarted without persistence is.
func StartRedis(t testing.TB) *Server {
	t.Helper()
	bin, err := lookPath("redis-server")
	if err != nil {
		missing(t, "redis-server", err)
	}
	port := freePort(t)
	s := &Server{Kind: "redis", Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dataDir(t, "redis", "")}
	s.start = func() (*exec.Cmd, error) {
		return command("", filepath.Join(s.Dir, "server.log"), bin,
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", s.Dir, "--daemonize", "no", "--protected-mode", "no")
	}
	s.ready = func(ctx context.Context) error { return redisPing(ctx, s.Addr) }
	return newServer(t, s)
}

// redisPing sends PING and wants +PONG.
func redisPing(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}
