// Package servers starts a MariaDB of a test's own on a free port, with its
// data in a temporary directory, for lockcheck's tests that need server
// options the shared MariaDB does not have (performance_schema).
//
// It is the MariaDB part of the conformance suites' tests/internal/servers,
// which this module cannot import (an internal package of another module
// path); keep the two alike. The binaries are Debian's mariadbd and
// mariadb-install-db (run as the mysql user when the tests run as root). A
// missing binary skips the test, and fails it when the environment variable
// CI is set: under CI nothing skips quietly. The server is killed and its
// directory removed when the test ends (t.Cleanup).
package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is one running server of the tests' own.
type Server struct {
	// Kind is "redis", "postgres" or "mariadb".
	Kind string
	// Addr is host:port on 127.0.0.1.
	Addr string
	// Port is Addr's port.
	Port int
	// DSN connects to it: for PostgreSQL a pgx keyword/value DSN (user
	// postgres, database postgres), for MariaDB a go-sql-driver/mysql DSN
	// (root, no password, database test). Empty for Redis.
	DSN string
	// Dir holds the server's data.
	Dir string

	t     testing.TB
	start func() (*exec.Cmd, error)
	ready func(ctx context.Context) error

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Kill stops the server with SIGKILL (its whole process group, as a crash
// of the machine would), and waits for it. Killing a stopped server does
// nothing.
func (s *Server) Kill() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kill()
}

func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	// PostgreSQL's backends leave the process group (setsid): kill every
	// descendant found before killing anything, then the group.
	pids := descendants(s.cmd.Process.Pid)
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = s.cmd.Wait()
	for _, pid := range pids { // wait until they are gone, so the port is free
		for i := 0; i < 200 && alive(pid); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	s.cmd = nil
}

// Restart kills the server if it runs and starts it again on the same port
// and data directory, returning when it accepts connections. Redis comes
// back empty (it runs without persistence); PostgreSQL and MariaDB recover
// their data.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kill()
	if err := s.launch(); err != nil {
		s.t.Fatalf("servers: restarting %s on %s: %v", s.Kind, s.Addr, err)
	}
}

// launch starts the process and waits until it answers; s.mu is held.
func (s *Server) launch() error {
	cmd, err := s.start()
	if err != nil {
		return err
	}
	s.cmd = cmd
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var last error
	for {
		if last = s.ready(ctx); last == nil {
			return nil
		}
		if !alive(cmd.Process.Pid) {
			s.kill()
			return fmt.Errorf("%s exited at start (see %s): %v", s.Kind, filepath.Join(s.Dir, "server.log"), last)
		}
		select {
		case <-ctx.Done():
			s.kill()
			return fmt.Errorf("%s did not answer in 60 s: %v", s.Kind, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// newServer registers s's cleanup, starts it, and fails t if it cannot.
func newServer(t testing.TB, s *Server) *Server {
	t.Helper()
	s.t = t
	t.Cleanup(func() {
		s.mu.Lock()
		s.kill()
		s.mu.Unlock()
		_ = os.RemoveAll(s.Dir)
	})
	s.mu.Lock()
	err := s.launch()
	s.mu.Unlock()
	if err != nil {
		t.Fatalf("servers: starting %s: %v", s.Kind, err)
	}
	return s
}

// missing skips t, or fails it under CI, for a binary that is not there.
func missing(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("servers: %s is required under CI: %v", what, err)
	}
	t.Skipf("servers: %s not installed, skipping: %v", what, err)
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("servers: no free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// dataDir makes a fresh directory under os.TempDir() (not t.TempDir(),
// whose parents another user cannot enter), owned by user when the tests
// run as root and user is not empty.
func dataDir(t testing.TB, kind, user string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lockplugin-"+kind+"-")
	if err != nil {
		t.Fatal(err)
	}
	if user != "" && os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "-R", user, dir).CombinedOutput(); err != nil {
			t.Fatalf("servers: chown %s %s: %v: %s", user, dir, err, out)
		}
	}
	return dir
}

// command returns cmd to run as user when the tests run as root (servers
// that refuse root), in its own process group, logging to log.
func command(user, log string, name string, args ...string) (*exec.Cmd, error) {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := runAs(cmd, user); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	go func() { // close our copy of the log once the process ends
		for alive(cmd.Process.Pid) {
			time.Sleep(200 * time.Millisecond)
		}
		f.Close()
	}()
	return cmd, nil
}

// run runs a set-up command to its end, as user when root.
func run(user string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	if err := runAs(cmd, user); err != nil {
		return err
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", name, err, out)
	}
	return nil
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// lookPath finds name on PATH or in /usr/sbin and /usr/bin.
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/bin"} {
		if p := filepath.Join(d, name); isExec(p) {
			return p, nil
		}
	}
	return "", errors.New(name + " not found on PATH, /usr/sbin or /usr/bin")
}

// runAs makes cmd run as user when the tests run as root (and user is not
// empty), with that user's home as HOME.
func runAs(cmd *exec.Cmd, user string) error {
	if user == "" || os.Geteuid() != 0 {
		return nil
	}
	u, err := osuser.Lookup(user)
	if err != nil {
		return fmt.Errorf("servers: user %s: %w", user, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	cmd.Env = append(os.Environ(), "HOME="+u.HomeDir, "USER="+user)
	cmd.Dir = os.TempDir()
	return nil
}

// descendants returns the pids of every process below pid, from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		children[pp] = append(children[pp], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}
