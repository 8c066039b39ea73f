//go:build unix

package fence_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

const (
	electNameEnv = "I16_ELECTION_NAME"
	electModeEnv = "I16_ELECTION_MODE" // "fenced" or "naive"
	electProcEnv = "I16_ELECTION_PROC"
	electTTL     = 600 * time.Millisecond
	electPoll    = 50 * time.Millisecond
	electorsEach = 2
)

// termRow is one term as its leader saw it: when it began to believe it
// led, and the last instant it still believed so (stamped before its
// Leading check), and how many of its writes the fence refused.
type termRow struct {
	Term    int64 `gorm:"primaryKey;autoIncrement:false"`
	Who     string
	Began   int64 // unix microseconds
	Last    int64
	Refused int64
}

func (termRow) TableName() string { return "i16_terms" }

// leaderRow is the shared row only leaders write, fenced by their term.
type leaderRow struct {
	ID   uint `gorm:"primaryKey"`
	Term int64
	Who  string
	lockplugin.Fence
}

func (leaderRow) TableName() string { return "i16_leader" }

func micros() int64 { return time.Now().UnixMicro() }

// TestI16ElectionHelper is not a test: TestI16Election runs the test
// binary again with only this function and the environment set; it runs
// two electors until killed.
func TestI16ElectionHelper(t *testing.T) {
	name := os.Getenv(electNameEnv)
	if name == "" {
		t.Skip("helper process for TestI16Election")
	}
	naive := os.Getenv(electModeEnv) == "naive"
	tg := testdb.Get(t, testdb.Postgres)
	store, err := sqlstore.New(tg.DB, sqlstore.Table(leaseTable))
	if err != nil {
		fmt.Println("i16-elect: error", err)
		os.Exit(2)
	}
	ctx := context.Background()
	for i := range electorsEach {
		who := fmt.Sprintf("%s/%d/pid%d", os.Getenv(electProcEnv), i, os.Getpid())
		e, err := election.New(store, name, election.TTL(electTTL), election.PollInterval(electPoll))
		if err != nil {
			fmt.Println("i16-elect: error", err)
			os.Exit(2)
		}
		go func() {
			for {
				term, err := e.Campaign(ctx)
				if err != nil {
					continue
				}
				began := micros()
				tg.DB.Create(&termRow{Term: term.Number(), Who: who, Began: began, Last: began})
				lead(tg.DB, term, who, naive)
			}
		}()
	}
	fmt.Println("i16-elect: started")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until killed
	os.Exit(3)
}

// lead acts as leader every 10 ms: stamps the time, checks it still
// leads, records the stamp and writes the shared row under its fence. The
// naive leader (the baseline) never checks again after winning, as
// elections rebuilt by hand often do, and writes unfenced.
func lead(db *gorm.DB, term *election.Term, who string, naive bool) {
	ctx := context.Background()
	fdb := db.WithContext(lockplugin.WithFence(ctx, term))
	var refused int64
	for {
		now := micros()
		if !naive && !term.Leading() {
			return
		}
		db.Model(&termRow{}).Where("term = ?", term.Number()).Update("last", now)
		if naive {
			db.Model(&leaderRow{ID: 1}).Updates(map[string]any{"term": term.Number(), "who": who})
		} else if err := fdb.Model(&leaderRow{ID: 1}).Updates(map[string]any{"term": term.Number(), "who": who}).Error; err != nil {
			if errors.Is(err, lockplugin.ErrStaleFence) {
				refused++
				db.Model(&termRow{}).Where("term = ?", term.Number()).Update("refused", refused)
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type electProc struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
}

func startElectProc(t *testing.T, name, mode string, slot int) *electProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestI16ElectionHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), electNameEnv+"="+name, electModeEnv+"="+mode, electProcEnv+"=p"+strconv.Itoa(slot))
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
			if strings.HasPrefix(sc.Text(), "i16-elect: started") && !ok {
				ok = true
				started <- true
			} else if strings.HasPrefix(sc.Text(), "i16-elect: error") {
				t.Errorf("election helper: %s", sc.Text())
			}
		}
		if !ok {
			started <- false
		}
	}()
	select {
	case ok := <-started:
		want(t, ok, "election helper exited before starting")
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("election helper did not start within 60 s")
	}
	return &electProc{cmd: cmd, stdin: stdin}
}

func (p *electProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	_ = p.stdin.Close()
}

// TestI16Election: 3 processes x 2 electors on the table store
// (PostgreSQL). The leader's process is killed (SIGKILL) or paused
// (SIGSTOP past the TTL, then SIGCONT) in turn. Each term records, from
// its leader, when it began and the last instant it believed it led. At
// no instant do two terms overlap, terms strictly increase, a new leader
// is elected within TTL + poll (+ slack for process scheduling), and the
// shared row keeps the last term's write: the paused leader's write after
// waking is refused by the fence. The baseline, leaders that never check
// again after winning and write unfenced, overlaps after one pause.
func TestI16Election(t *testing.T) {
	tg := testdb.Get(t, testdb.Postgres)
	t.Run("naive", func(t *testing.T) {
		overlaps, _ := runElection(t, tg, "naive", 1)
		want(t, overlaps > 0, "the naive baseline must overlap after a pause")
	})
	t.Run("fenced", func(t *testing.T) {
		overlaps, terms := runElection(t, tg, "fenced", 4)
		want(t, overlaps == 0, "%d overlapping terms", overlaps)
		var row leaderRow
		noErr(t, tg.DB.First(&row, 1).Error)
		want(t, row.Term == terms[len(terms)-1].Term, "the shared row has term %d, the last term is %d", row.Term, terms[len(terms)-1].Term)
	})
}

func runElection(t *testing.T, tg *testdb.Target, mode string, events int) (int, []termRow) {
	tg.Reset(t, &termRow{}, &leaderRow{})
	noErr(t, tg.DB.Create(&leaderRow{ID: 1}).Error)
	name := testdb.Unique(t, "i16_elect")
	var mu sync.Mutex
	procs := make([]*electProc, 3)
	for i := range procs {
		procs[i] = startElectProc(t, name, mode, i)
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range procs {
			p.kill()
		}
	}()
	leaderOf := func(after int64, since time.Time) (termRow, time.Duration) {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			var r termRow
			if err := tg.DB.Order("term DESC").Limit(1).Find(&r).Error; err == nil && r.Term > after {
				return r, time.Since(since)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("no leader after term %d within 20 s", after)
		return termRow{}, 0
	}
	cur, _ := leaderOf(0, time.Now())
	var worst time.Duration
	for ev := range events {
		time.Sleep(200 * time.Millisecond) // let it lead a little
		pid := 0
		fmt.Sscanf(cur.Who[strings.Index(cur.Who, "pid")+3:], "%d", &pid)
		slot := -1
		for i, p := range procs {
			if p.cmd.Process.Pid == pid {
				slot = i
			}
		}
		want(t, slot >= 0, "leader %s is in none of the processes", cur.Who)
		at := time.Now()
		if ev%2 == 1 || mode == "naive" {
			noErr(t, procs[slot].cmd.Process.Signal(syscall.SIGSTOP))
			next, took := leaderOf(cur.Term, at)
			worst = max(worst, took)
			time.Sleep(100 * time.Millisecond)
			noErr(t, procs[slot].cmd.Process.Signal(syscall.SIGCONT))
			time.Sleep(200 * time.Millisecond) // the woken leader acts
			cur = next
		} else {
			mu.Lock()
			procs[slot].kill()
			mu.Unlock()
			next, took := leaderOf(cur.Term, at)
			worst = max(worst, took)
			procs[slot] = startElectProc(t, name, mode, slot)
			cur = next
		}
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	for _, p := range procs {
		p.kill()
	}
	procs = nil
	mu.Unlock()

	var terms []termRow
	noErr(t, tg.DB.Order("began").Find(&terms).Error)
	overlaps := 0
	var refused int64
	for i := range terms {
		refused += terms[i].Refused
		if i == 0 {
			continue
		}
		p, c := terms[i-1], terms[i]
		want(t, c.Term > p.Term, "term %d began after term %d", c.Term, p.Term)
		if p.Last >= c.Began {
			overlaps++
			t.Logf("%s: term %d (%s) still believed it led %v after term %d (%s) began",
				mode, p.Term, p.Who, time.Duration(p.Last-c.Began)*time.Microsecond, c.Term, c.Who)
		}
	}
	t.Logf("%s: %d events, %d terms, overlapping terms %d, stale leader writes refused by the fence %d, slowest new leader %v (TTL %v + poll %v)",
		mode, events, len(terms), overlaps, refused, worst.Round(time.Millisecond), electTTL, electPoll)
	if mode == "fenced" {
		// TTL + poll, plus this test's own 10 ms poll and generous room for
		// process scheduling on a loaded machine: a liveness bound, not a
		// speed measurement (the log line reports the actual figure).
		want(t, worst < electTTL+electPoll+2*time.Second, "a new leader took %v", worst)
	}
	return overlaps, terms
}
