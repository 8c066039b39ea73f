//go:build unix

package fence_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/etcdstore"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore/pgnotify"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

const (
	foStoreEnv = "I25_FAILOVER_STORE" // "table", "etcd" or "redis"
	foEtcdEnv  = "I25_FAILOVER_ETCD"  // the etcd endpoints, comma-separated
	foRedisEnv = "I25_FAILOVER_REDIS" // the Redis address (a server of the test's own)
	foNameEnv  = "I25_FAILOVER_NAME"
	foTTLEnv   = "I25_FAILOVER_TTL" // the TTL, default 3s (a Go duration)
	foProcs    = 3
	foTrials   = 10
)

// TestI25FailoverHelper is not a test: TestI25Failover runs the test
// binary again with only this function and the environment set. It runs
// one candidate with default options but the TTL (foTTL), prints a line
// each time it wins (the term and the time it won, in Unix
// microseconds), leads without resigning, and campaigns again when a term
// ends, until killed.
func TestI25FailoverHelper(t *testing.T) {
	name := os.Getenv(foNameEnv)
	if name == "" {
		t.Skip("helper process for TestI25Failover")
	}
	var store lease.Store
	switch os.Getenv(foStoreEnv) {
	case "table", "table-listen":
		var opts []sqlstore.Option
		if os.Getenv(foStoreEnv) == "table-listen" {
			opts = append(opts, pgnotify.Listen())
		}
		s, err := sqlstore.New(testdb.Get(t, testdb.Postgres).DB, append(opts, sqlstore.Table(leaseTable))...)
		if err != nil {
			fmt.Println("i25-failover: error", err)
			os.Exit(2)
		}
		store = s
	case "etcd":
		store = etcdstore.New(etcdClientAt(t, strings.Split(os.Getenv(foEtcdEnv), ",")...), etcdstore.Prefix("i25-failover/"))
	case "redis":
		c := redis.NewClient(&redis.Options{Addr: os.Getenv(foRedisEnv), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
		store = redisstore.New(c, redisstore.Prefix("i25-failover:"))
	}
	e, err := election.New(store, name, election.TTL(failoverTTL()))
	if err != nil {
		fmt.Println("i25-failover: error", err)
		os.Exit(2)
	}
	ctx := context.Background()
	go func() {
		for {
			term, err := e.Campaign(ctx)
			if err != nil {
				continue
			}
			fmt.Printf("i25-failover: lead %d %d\n", term.Number(), time.Now().UnixMicro())
			<-term.Done()
		}
	}()
	fmt.Println("i25-failover: started")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until killed
	os.Exit(3)
}

// failoverTTL is the candidates' TTL: 3 s unless I25_FAILOVER_TTL says
// otherwise (the notes' TTL 10 s run).
func failoverTTL() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(foTTLEnv)); err == nil && d > 0 {
		return d
	}
	return 3 * time.Second
}

// foWin is one helper's win: which process, the term, when.
type foWin struct {
	proc int
	term int64
	at   time.Time
}

// startFailoverProc starts one helper (slot proc) and forwards its wins.
func startFailoverProc(t *testing.T, env []string, proc int, wins chan<- foWin) *electProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestI25FailoverHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	noErr(t, err)
	stdin, err := cmd.StdinPipe()
	noErr(t, err)
	cmd.Stderr = os.Stderr
	noErr(t, cmd.Start())
	started := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "i25-failover: started") && !ok:
				ok = true
				started <- true
			case strings.HasPrefix(line, "i25-failover: lead "):
				f := strings.Fields(strings.TrimPrefix(line, "i25-failover: lead "))
				term, _ := strconv.ParseInt(f[0], 10, 64)
				us, _ := strconv.ParseInt(f[1], 10, 64)
				wins <- foWin{proc: proc, term: term, at: time.UnixMicro(us)}
			case strings.HasPrefix(line, "i25-failover: error"):
				t.Errorf("failover helper: %s", line)
			}
		}
		if !ok {
			started <- false
		}
	}()
	select {
	case ok := <-started:
		want(t, ok, "failover helper exited before starting")
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("failover helper did not start within 60 s")
	}
	return &electProc{cmd: cmd, stdin: stdin}
}

// TestI25Failover: 3 processes, one candidate each (TTL 3 s, default
// poll: each waiting candidate reads the holder about every 300 ms, or
// waits on etcd's watch or Redis's subscription), on the table store
// (shared PostgreSQL), on the table store with Listen (candidates wait on
// LISTEN and the holder's expiry, reading every TTL/3), on etcd (a cluster
// of the test's own) and on Redis (a server of the test's own). 10 times,
// the leader's process is
// killed (SIGKILL) at a random point of its refresh cycle, and a new
// leader must win within TTL + 1 s of the kill; the killed process is
// replaced.
func TestI25Failover(t *testing.T) {
	foTTL := failoverTTL()
	for _, kind := range []string{"table", "table-listen", "etcd", "redis"} {
		t.Run(kind, func(t *testing.T) {
			env := []string{foTTLEnv + "=" + foTTL.String(), foStoreEnv + "=" + kind, foNameEnv + "=" + fmt.Sprintf("i25-failover-%s-%d", kind, time.Now().UnixNano())}
			switch kind {
			case "etcd":
				env = append(env, foEtcdEnv+"="+strings.Join(servers.StartEtcdCluster(t).Endpoints(), ","))
			case "redis":
				env = append(env, foRedisEnv+"="+servers.StartRedis(t).Addr)
			default:
				testdb.Get(t, testdb.Postgres)
			}
			wins := make(chan foWin, 64)
			procs := make([]*electProc, foProcs)
			for i := range procs {
				procs[i] = startFailoverProc(t, env, i, wins)
			}
			defer func() {
				for _, p := range procs {
					p.kill()
				}
			}()
			next := func(after int64, within time.Duration) foWin {
				deadline := time.After(within)
				for {
					select {
					case w := <-wins:
						if w.term > after {
							return w
						}
					case <-deadline:
						t.Fatalf("no new leader after term %d within %v", after, within)
					}
				}
			}
			cur := next(0, 30*time.Second)
			var took []time.Duration
			late := 0
			for range foTrials {
				// Kill at a random point of the leader's refresh cycle
				// (every TTL/3).
				time.Sleep(200*time.Millisecond + rand.N(foTTL/3))
				at := time.Now()
				procs[cur.proc].kill()
				w := next(cur.term, foTTL+30*time.Second)
				d := w.at.Sub(at)
				took = append(took, d)
				if d > foTTL+time.Second {
					late++
				}
				procs[cur.proc] = startFailoverProc(t, env, cur.proc, wins)
				cur = w
			}
			lo, hi := took[0], took[0]
			for _, d := range took {
				lo, hi = min(lo, d), max(hi, d)
			}
			t.Logf("%s: %d kills of the leader (TTL %v): new leader %v-%v after the kill; %d later than TTL + 1 s; all: %v",
				kind, foTrials, foTTL, lo.Round(time.Millisecond), hi.Round(time.Millisecond), late, took)
			want(t, late == 0, "%d of %d failovers took longer than TTL + 1 s", late, foTrials)
		})
	}
}
