// Package servers starts the tests' OWN database and Redis servers, on
// free ports with their data in temporary directories, so that a test can
// kill, restart or partition them without touching the shared servers
// that every other test package uses.
//
//	r := servers.StartRedis(t)     // empty, no persistence
//	client := redis.NewClient(&redis.Options{Addr: r.Addr})
//	r.Kill()                       // SIGKILL, as a crash
//	r.Restart()                    // same port; a Redis comes back EMPTY
//
// StartPostgres and StartMariaDB do the same for PostgreSQL (initdb, ~2 s)
// and MariaDB (mariadb-install-db, a few seconds); their data survives
// Kill and Restart, as a crashed database's does. Every server is killed
// and its directory removed when the test ends (t.Cleanup).
//
// The binaries are Debian's: redis-server on PATH,
// /usr/lib/postgresql/<version>/bin/{initdb,postgres} (run as the
// postgres user when the tests run as root), and mariadbd with
// mariadb-install-db. A missing binary skips the test, and fails it when
// the environment variable CI is set: under CI nothing skips quietly.
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
	"sort"
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

// probeTimeout bounds one readiness probe.
const probeTimeout = 5 * time.Second

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
		// Each probe gets its own bound: a server that accepts and then
		// does not answer (still starting, or stuck) must not keep one
		// probe waiting for the whole minute.
		pctx, pcancel := context.WithTimeout(ctx, probeTimeout)
		last = s.ready(pctx)
		pcancel()
		if last == nil {
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
	if err := tryServer(t, s); err != nil {
		t.Fatalf("servers: starting %s: %v", s.Kind, err)
	}
	return s
}

// tryServer is newServer returning the error instead of failing t: the
// server is gone then (launch killed it), its directory removed at t's end.
func tryServer(t testing.TB, s *Server) error {
	t.Helper()
	s.t = t
	t.Cleanup(func() {
		s.mu.Lock()
		s.kill()
		s.mu.Unlock()
		_ = os.RemoveAll(s.Dir)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.launch()
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

// freePortPair returns a free port p whose p+offset is free as well (and
// at most 65535): a Redis Cluster node also listens on its port + 10000
// for the cluster bus, and exits at start when that one is taken or out
// of range, which a bare freePort leaves to chance.
func freePortPair(t testing.TB, offset int) int {
	t.Helper()
	for range 100 {
		p := freePort(t)
		if p+offset > 65535 {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+offset))
		if err != nil {
			continue
		}
		ln.Close()
		return p
	}
	t.Fatalf("servers: no free port p with p+%d free in 100 tries", offset)
	return 0
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

// pgBin finds a PostgreSQL program in Debian's newest version directory,
// or on PATH.
func pgBin(name string) (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if p := filepath.Join(d, name); isExec(p) {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
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
