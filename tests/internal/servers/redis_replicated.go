package servers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startRedisWith starts a redis-server of the test's own on a free port
// with the arguments args returns (base gives StartRedis's: no
// persistence).
func startRedisWith(t testing.TB, kind string, args func(s *Server, base []string) []string) *Server {
	t.Helper()
	bin, err := lookPath("redis-server")
	if err != nil {
		missing(t, "redis-server", err)
	}
	port := freePort(t)
	if kind == "redis-cluster" {
		port = freePortPair(t, 10000) // the cluster bus listens on port + 10000
	}
	s := &Server{Kind: kind, Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dataDir(t, kind, "")}
	base := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.Dir, "--daemonize", "no", "--protected-mode", "no"}
	all := args(s, base)
	s.start = func() (*exec.Cmd, error) {
		return command("", filepath.Join(s.Dir, "server.log"), bin, all...)
	}
	s.ready = func(ctx context.Context) error { return redisPing(ctx, s.Addr) }
	return newServer(t, s)
}

// StartRedisReplica starts a Redis replicating from primary (host:port,
// which may be a faultproxy in front of the primary, so that the test can
// make the replica lag), without persistence, and waits until its link to
// the primary is up and the first sync is done.
func StartRedisReplica(t testing.TB, primary string) *Server {
	t.Helper()
	host, port, ok := strings.Cut(primary, ":")
	if !ok {
		t.Fatalf("servers: replica of %q: want host:port", primary)
	}
	s := startRedisWith(t, "redis-replica", func(_ *Server, base []string) []string {
		return append(base, "--replicaof", host, port, "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
			"--repl-diskless-load", "on-empty-db")
	})
	if err := waitFor(30*time.Second, func() error {
		info, err := RedisDo(s.Addr, "INFO", "replication")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica of %s not in sync yet", primary)
		}
		return nil
	}); err != nil {
		t.Fatalf("servers: %v", err)
	}
	return s
}

// StartRedisPrimary starts a Redis to be replicated (StartRedis with a
// diskless replication sync, so a replica's first sync takes no disk and
// no delay).
func StartRedisPrimary(t testing.TB) *Server {
	t.Helper()
	return startRedisWith(t, "redis", func(_ *Server, base []string) []string {
		return append(base, "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0")
	})
}

// SentinelMaster is the name the sentinels of StartSentinels monitor.
const SentinelMaster = "lockplugin"

// StartSentinels starts n Redis Sentinels monitoring primary as
// SentinelMaster with quorum n/2+1, a primary considered down after
// 1 s without an answer, and waits until each knows of replicas replicas.
func StartSentinels(t testing.TB, primary string, n, replicas int) []*Server {
	t.Helper()
	host, port, _ := strings.Cut(primary, ":")
	var out []*Server
	for range n {
		s := startRedisWith(t, "redis-sentinel", func(s *Server, _ []string) []string {
			conf := filepath.Join(s.Dir, "sentinel.conf")
			body := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\n"+
				"sentinel monitor %s %s %s %d\n"+
				"sentinel down-after-milliseconds %[2]s 1000\n"+
				"sentinel failover-timeout %[2]s 4000\n"+
				"sentinel parallel-syncs %[2]s 1\n", s.Port, SentinelMaster, host, port, n/2+1)
			if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			// The config file first: redis-server reads it, then the flags.
			return []string{conf, "--sentinel", "--dir", s.Dir}
		})
		out = append(out, s)
	}
	for _, s := range out {
		if err := waitFor(30*time.Second, func() error {
			r, err := RedisDo(s.Addr, "SENTINEL", "SENTINELS", SentinelMaster)
			if err != nil {
				return err
			}
			if strings.Count(r, "name") < n-1 {
				return fmt.Errorf("sentinel %s does not see the other sentinels yet", s.Addr)
			}
			r, err = RedisDo(s.Addr, "SENTINEL", "REPLICAS", SentinelMaster)
			if err != nil {
				return err
			}
			if strings.Count(r, "name") < replicas {
				return fmt.Errorf("sentinel %s does not see %d replicas yet: %s", s.Addr, replicas, r)
			}
			return nil
		}); err != nil {
			t.Fatalf("servers: %v", err)
		}
	}
	return out
}

// SentinelAddrs returns the sentinels' addresses.
func SentinelAddrs(ss []*Server) []string {
	var a []string
	for _, s := range ss {
		a = append(a, s.Addr)
	}
	return a
}

// WaitPromoted waits up to d for the sentinel at sentinel to name addr as
// SentinelMaster's primary, and addr to answer as a master.
func WaitPromoted(sentinel, addr string, d time.Duration) error {
	return waitFor(d, func() error {
		r, err := RedisDo(sentinel, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
		if err != nil {
			return err
		}
		_, port, _ := strings.Cut(addr, ":")
		if !strings.Contains(r, port) {
			return fmt.Errorf("sentinel names %s, not %s, as the primary", r, addr)
		}
		info, err := RedisDo(addr, "INFO", "replication")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "role:master") {
			return fmt.Errorf("%s is not a master yet", addr)
		}
		return nil
	})
}

// waitFor retries f every 50 ms until it returns nil or d passes.
func waitFor(d time.Duration, f func() error) error {
	end := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("after %v: %w", d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RedisDo runs one command with redis-cli and returns its output (the
// tests' own servers only; the harness needs no Go client).
func RedisDo(addr string, args ...string) (string, error) {
	host, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "redis-cli", append([]string{"-h", host, "-p", port}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("redis-cli %v: %v: %s", args, err, out)
	}
	s := string(out)
	if strings.HasPrefix(s, "ERR") || strings.HasPrefix(s, "(error)") {
		return s, fmt.Errorf("redis-cli %v: %s", args, strings.TrimSpace(s))
	}
	return s, nil
}
