package servers

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RedisCluster is a 6-node Redis Cluster of the test's own: three
// primaries, each with one replica, on loopback ports, without
// persistence. A node considers another failed after 1 s without an
// answer, and any replica may be promoted however far it lags
// (cluster-replica-validity-factor 0), so a killed primary's replica takes
// over within a few seconds.
type RedisCluster struct {
	Nodes []*Server
}

// Addrs returns every node's address.
func (c *RedisCluster) Addrs() []string {
	var a []string
	for _, n := range c.Nodes {
		a = append(a, n.Addr)
	}
	return a
}

// StartRedisCluster starts the six nodes, joins them with redis-cli
// --cluster create, and waits until every node reports cluster_state:ok
// and every primary has a replica in sync.
func StartRedisCluster(t testing.TB) *RedisCluster {
	t.Helper()
	if _, err := lookPath("redis-cli"); err != nil {
		missing(t, "redis-cli", err)
	}
	c := &RedisCluster{}
	for range 6 {
		c.Nodes = append(c.Nodes, startRedisWith(t, "redis-cluster", func(s *Server, base []string) []string {
			return append(base, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(s.Dir, "nodes.conf"),
				"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0",
				"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0")
		}))
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("servers: redis-cli --cluster create: %v: %s", err, out)
	}
	if err := waitFor(30*time.Second, c.healthy); err != nil {
		t.Fatalf("servers: redis cluster: %v", err)
	}
	return c
}

// healthy: every running node says cluster_state:ok, and every primary
// has a replica whose link is up.
func (c *RedisCluster) healthy() error {
	for _, n := range c.Nodes {
		info, err := RedisDo(n.Addr, "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster not ok yet", n.Addr)
		}
		repl, err := RedisDo(n.Addr, "INFO", "replication")
		if err != nil {
			return err
		}
		if strings.Contains(repl, "role:master") && !strings.Contains(repl, "connected_slaves:1") {
			return fmt.Errorf("%s: primary without its replica yet", n.Addr)
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return fmt.Errorf("%s: replica not in sync yet", n.Addr)
		}
	}
	return nil
}

// PrimaryFor returns the node that serves key as a primary now, and its
// replica.
func (c *RedisCluster) PrimaryFor(key string) (primary, replica *Server, err error) {
	var from *Server
	for _, n := range c.Nodes {
		if _, err := RedisDo(n.Addr, "PING"); err == nil {
			from = n
			break
		}
	}
	if from == nil {
		return nil, nil, fmt.Errorf("no node answers")
	}
	slot, err := RedisDo(from.Addr, "CLUSTER", "KEYSLOT", key)
	if err != nil {
		return nil, nil, err
	}
	var s int
	if _, err := fmt.Sscan(strings.TrimSpace(slot), &s); err != nil {
		return nil, nil, fmt.Errorf("CLUSTER KEYSLOT answered %q", slot)
	}
	nodes, err := RedisDo(from.Addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, nil, err
	}
	// <id> <ip:port@bus> <flags> <master-id> <ping> <pong> <epoch> <state> <slots>...
	var primaryID string
	byID := map[string]string{}
	lines := strings.Split(strings.TrimSpace(nodes), "\n")
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		byID[f[0]] = addr
		if !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
			continue
		}
		for _, r := range f[8:] {
			lo, hi, _ := strings.Cut(r, "-")
			var a, b int
			if _, err := fmt.Sscan(lo, &a); err != nil {
				continue
			}
			b = a
			if hi != "" {
				_, _ = fmt.Sscan(hi, &b)
			}
			if a <= s && s <= b {
				primaryID = f[0]
			}
		}
	}
	if primaryID == "" {
		return nil, nil, fmt.Errorf("no primary serves slot %d yet", s)
	}
	var replicaAddr string
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) >= 4 && f[3] == primaryID && !strings.Contains(f[2], "fail") {
			replicaAddr, _, _ = strings.Cut(f[1], "@")
		}
	}
	for _, n := range c.Nodes {
		if n.Addr == byID[primaryID] {
			primary = n
		}
		if n.Addr == replicaAddr {
			replica = n
		}
	}
	if primary == nil {
		return nil, nil, fmt.Errorf("slot %d's primary %s is not one of the nodes", s, byID[primaryID])
	}
	return primary, replica, nil
}
