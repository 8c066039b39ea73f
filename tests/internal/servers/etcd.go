package servers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// EtcdCluster is a 3-member etcd cluster of the test's own, on loopback
// ports, each member's data in a temporary directory that survives Kill
// and Restart (as a crashed member's disk does).
type EtcdCluster struct {
	// Members are the three members; Members[i].Addr is its client address.
	Members []*Server
	t       testing.TB
}

// Endpoints returns the members' client URLs.
func (c *EtcdCluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, "http://"+m.Addr)
	}
	return eps
}

// StartEtcdCluster starts three etcd members (Debian's etcd-server, 3.4)
// and returns once the cluster has a leader. A missing etcd binary skips
// the test, and fails it under CI.
func StartEtcdCluster(t testing.TB) *EtcdCluster {
	t.Helper()
	bin, err := lookPath("etcd")
	if err != nil {
		missing(t, "etcd (Debian package etcd-server)", err)
	}
	// A port freePort found free can be taken by another test's server
	// before etcd binds it (the suites start many servers at once), and
	// the member exits at start: the cluster is started again on new
	// ports, up to 3 times, with the member's own reason logged.
	var c *EtcdCluster
	for attempt := 1; ; attempt++ {
		var err error
		c, err = startEtcdMembers(t, bin)
		if err == nil {
			break
		}
		if attempt == 3 {
			t.Fatalf("servers: starting etcd (3 attempts): %v", err)
		}
		t.Logf("servers: starting etcd, attempt %d: %v; again on other ports", attempt, err)
	}
	if _, err := c.WaitLeader(60 * time.Second); err != nil {
		t.Fatalf("servers: etcd cluster: %v", err)
	}
	return c
}

// startEtcdMembers starts the three members of a new cluster on free
// ports; on an error every member started is killed.
func startEtcdMembers(t testing.TB, bin string) (*EtcdCluster, error) {
	t.Helper()
	const n = 3
	type ports struct{ client, peer int }
	ps := make([]ports, n)
	var initial []string
	for i := range ps {
		ps[i] = ports{freePort(t), freePort(t)}
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ps[i].peer))
	}
	token := fmt.Sprintf("lockplugin-%d", time.Now().UnixNano())
	c := &EtcdCluster{t: t}
	// Start all three before waiting on any: a member alone has no quorum.
	for i, p := range ps {
		s := &Server{Kind: "etcd", Port: p.client, Addr: "127.0.0.1:" + strconv.Itoa(p.client), Dir: dataDir(t, "etcd", "")}
		name := fmt.Sprintf("m%d", i)
		peer := fmt.Sprintf("http://127.0.0.1:%d", p.peer)
		client := "http://" + s.Addr
		s.start = func() (*exec.Cmd, error) {
			return command("", filepath.Join(s.Dir, "server.log"), bin,
				"--name", name, "--data-dir", filepath.Join(s.Dir, "data"),
				"--listen-client-urls", client, "--advertise-client-urls", client,
				"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
				"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-token", token,
				"--initial-cluster-state", "new", "--log-level", "warn")
		}
		s.ready = func(ctx context.Context) error {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", s.Addr)
			if err != nil {
				return err
			}
			return conn.Close()
		}
		if err := tryServer(t, s); err != nil {
			if log, rerr := os.ReadFile(filepath.Join(s.Dir, "server.log")); rerr == nil {
				err = fmt.Errorf("%w; its log ends: %s", err, tail(string(log), 300))
			}
			for _, m := range c.Members {
				m.mu.Lock()
				m.kill()
				m.mu.Unlock()
			}
			return nil, err
		}
		c.Members = append(c.Members, s)
	}
	return c, nil
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// etcdStatus is the part of /v3/maintenance/status the tests read.
type etcdStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader string `json:"leader"`
}

func status(ctx context.Context, addr string) (etcdStatus, error) {
	var st etcdStatus
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v3/maintenance/status", bytes.NewReader([]byte("{}")))
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("status %s", resp.Status)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// Leader returns the index in Members of the member that every running
// member answering agrees is the leader, or -1 and an error.
func (c *EtcdCluster) Leader() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ids := map[string]int{}
	leader := ""
	var last error
	for i, m := range c.Members {
		st, err := status(ctx, m.Addr)
		if err != nil {
			last = err
			continue
		}
		ids[st.Header.MemberID] = i
		if st.Leader == "" || st.Leader == "0" || (leader != "" && st.Leader != leader) {
			return -1, fmt.Errorf("no agreed leader yet (%q, %q)", leader, st.Leader)
		}
		leader = st.Leader
	}
	if i, ok := ids[leader]; ok {
		return i, nil
	}
	if last == nil {
		last = fmt.Errorf("leader %q is not among the members that answered", leader)
	}
	return -1, last
}

// WaitLeader waits up to d for the cluster to have a leader that answers,
// and returns its index.
func (c *EtcdCluster) WaitLeader(d time.Duration) (int, error) {
	end := time.Now().Add(d)
	for {
		i, err := c.Leader()
		if err == nil {
			return i, nil
		}
		if time.Now().After(end) {
			return -1, fmt.Errorf("no leader within %v: %v", d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// KillAll kills every member (SIGKILL); RestartAll starts them again.
func (c *EtcdCluster) KillAll() {
	for _, m := range c.Members {
		m.Kill()
	}
}

// RestartAll kills and restarts every member, and waits for a leader.
func (c *EtcdCluster) RestartAll() {
	c.t.Helper()
	c.KillAll()
	for _, m := range c.Members {
		m.Restart()
	}
	if _, err := c.WaitLeader(60 * time.Second); err != nil {
		c.t.Fatalf("servers: etcd cluster after restart: %v", err)
	}
}
