package lease_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// The fairness of the local store on one hot name (issue 25): workers take
// the name in turn with a short hold, through a Manager with a wait limit,
// for LOCALFAIR_SECONDS (default 3 s here; the figure is 30 s).

const (
	fairDirEnv     = "LEASE_TEST_FAIR_DIR"
	fairWorkersEnv = "LEASE_TEST_FAIR_WORKERS"
	fairRunEnv     = "LEASE_TEST_FAIR_RUN"
	fairWait       = 5 * time.Second
	fairHold       = time.Millisecond
	fairName       = namePrefix + "hot"
)

func fairSeconds() time.Duration {
	if s, err := strconv.Atoi(os.Getenv("LOCALFAIR_SECONDS")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 3 * time.Second
}

// fairStats is one run's record: every acquisition's wait, acquisitions
// per worker, waits that ran out, other errors, and the holders' intervals
// (fence, start, end in Unix nanoseconds) for the overlap check.
type fairStats struct {
	waits     []time.Duration
	perWorker []int
	ranOut    int
	failed    int
	held      [][3]int64
}

// fairRun has workers goroutines of this process take fairName in dir in
// turn until run has passed.
func fairRun(dir string, workers int, run time.Duration) (*fairStats, error) {
	s, err := lease.NewLocalStore(dir)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	m := lease.NewManager(s)
	var mu sync.Mutex
	var held [][3]int64
	rec := hotName(workers, run, fairWait, 0, func(ctx context.Context, _ int) (int64, func(), error) {
		l, err := m.Acquire(ctx, fairName, lease.TTL(10*time.Second), lease.WaitAtMost(fairWait))
		if err != nil {
			return 0, nil, err
		}
		return l.Fence(), func() { _ = l.Release(context.Background()) }, nil
	}, func(fence int64) {
		in := time.Now().UnixNano()
		time.Sleep(fairHold)
		out := time.Now().UnixNano()
		mu.Lock()
		held = append(held, [3]int64{fence, in, out})
		mu.Unlock()
	})
	return &fairStats{waits: rec.waits, perWorker: rec.perWorker, ranOut: rec.ranOut, failed: rec.failed, held: held}, nil
}

// check counts overlapping holds and fences not above the previous
// holder's, in order of the holds' starts.
func (st *fairStats) check() (overlaps, regressed int) {
	slices.SortFunc(st.held, func(a, b [3]int64) int { return int(a[1] - b[1]) })
	for i := 1; i < len(st.held); i++ {
		if st.held[i][1] < st.held[i-1][2] {
			overlaps++
		}
		if st.held[i][0] <= st.held[i-1][0] {
			regressed++
		}
	}
	return overlaps, regressed
}

func (st *fairStats) String() string {
	slices.Sort(st.waits)
	pct := func(p float64) time.Duration {
		if len(st.waits) == 0 {
			return 0
		}
		return st.waits[min(len(st.waits)-1, int(p*float64(len(st.waits))))].Round(100 * time.Microsecond)
	}
	lo, hi := slices.Min(st.perWorker), slices.Max(st.perWorker)
	return fmt.Sprintf("%d acquisitions, per worker min %d max %d; wait p50 %v, p99 %v, max %v; %d waits ran out (%v), %d other errors",
		len(st.waits), lo, hi, pct(0.5), pct(0.99), pct(1), st.ranOut, fairWait, st.failed)
}

// TestLocalFairnessHelperProcess is not a test: TestLocalFairnessProcesses
// runs the test binary again with only this function and the environment
// set; it runs fairRun and prints its record.
func TestLocalFairnessHelperProcess(t *testing.T) {
	dir := os.Getenv(fairDirEnv)
	if dir == "" {
		t.Skip("helper process for TestLocalFairnessProcesses")
	}
	workers, _ := strconv.Atoi(os.Getenv(fairWorkersEnv))
	run, _ := time.ParseDuration(os.Getenv(fairRunEnv))
	st, err := fairRun(dir, workers, run)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	for _, w := range st.waits {
		fmt.Fprintln(out, "W", int64(w))
	}
	for _, n := range st.perWorker {
		fmt.Fprintln(out, "P", n)
	}
	for _, h := range st.held {
		fmt.Fprintln(out, "H", h[0], h[1], h[2])
	}
	fmt.Fprintln(out, "R", st.ranOut, st.failed)
	_ = out.Flush()
	os.Exit(0)
}

// TestLocalFairness: 8 goroutines of one process on one hot name. Within a
// process the local store queues waiters first come, first served, so no
// worker is left behind: every wait ends well within the limit and the
// least served worker gets at least half the acquisitions of the most
// served. No overlap, fences strictly increasing, and no goroutine or
// file descriptor left behind.
func TestLocalFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of contention")
	}
	dir := t.TempDir()
	g0, fd0 := runtime.NumGoroutine(), openFDs(t)
	st, err := fairRun(dir, 8, fairSeconds())
	noErr(t, err)
	overlaps, regressed := st.check()
	t.Logf("local, 8 goroutines, %v: %v; %d overlaps, %d fence regressions", fairSeconds(), st, overlaps, regressed)
	want(t, overlaps == 0 && regressed == 0, "%d overlaps, %d fence regressions", overlaps, regressed)
	want(t, st.ranOut == 0 && st.failed == 0, "%d waits ran out, %d errors", st.ranOut, st.failed)
	lo, hi := slices.Min(st.perWorker), slices.Max(st.perWorker)
	want(t, 2*lo >= hi, "per worker %v: the least served got less than half of the most served", st.perWorker)
	want(t, st.waits[len(st.waits)-1] < time.Second, "longest wait %v (8 workers holding 1 ms each)", st.waits[len(st.waits)-1])
	settle := time.Now().Add(2 * time.Second)
	for (runtime.NumGoroutine() > g0 || openFDs(t) > fd0) && time.Now().Before(settle) {
		time.Sleep(10 * time.Millisecond)
	}
	want(t, runtime.NumGoroutine() <= g0, "%d goroutines after, %d before", runtime.NumGoroutine(), g0)
	want(t, openFDs(t) <= fd0, "%d open files after, %d before", openFDs(t), fd0)
}

// TestLocalFairnessProcesses: 4 processes of 2 goroutines each on one hot
// name. Across processes the local store cannot queue (flock has no
// order); it bounds unfairness with a poll that grows more frequent with
// the waiter's age. Reported; it asserts no overlap, no fence regression,
// and that no wait ran out.
func TestLocalFairnessProcesses(t *testing.T) {
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("a few seconds of contention between processes")
	}
	dir := t.TempDir()
	const procs, workers = 4, 2
	run := fairSeconds()
	all := &fairStats{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLocalFairnessHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), fairDirEnv+"="+dir, fairWorkersEnv+"="+strconv.Itoa(workers), fairRunEnv+"="+run.String())
		cmd.Stderr = os.Stderr
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := cmd.Output()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("helper: %v: %s", err, out)
				return
			}
			for _, line := range strings.Split(string(out), "\n") {
				f := strings.Fields(line)
				n := make([]int64, len(f))
				for i := 1; i < len(f); i++ {
					n[i], _ = strconv.ParseInt(f[i], 10, 64)
				}
				switch {
				case len(f) == 2 && f[0] == "W":
					all.waits = append(all.waits, time.Duration(n[1]))
				case len(f) == 2 && f[0] == "P":
					all.perWorker = append(all.perWorker, int(n[1]))
				case len(f) == 4 && f[0] == "H":
					all.held = append(all.held, [3]int64{n[1], n[2], n[3]})
				case len(f) == 3 && f[0] == "R":
					all.ranOut += int(n[1])
					all.failed += int(n[2])
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() || len(all.perWorker) != procs*workers {
		t.Fatalf("%d workers reported", len(all.perWorker))
	}
	overlaps, regressed := all.check()
	t.Logf("local, %d processes x %d goroutines, %v: %v; per worker %v; %d overlaps, %d fence regressions", procs, workers, run, all, all.perWorker, overlaps, regressed)
	want(t, overlaps == 0 && regressed == 0, "%d overlaps, %d fence regressions", overlaps, regressed)
	want(t, all.ranOut == 0 && all.failed == 0, "%d waits ran out, %d errors", all.ranOut, all.failed)
}

// openFDs counts this process's open file descriptors (-1 where
// /proc/self/fd cannot be read: then the comparison always holds).
func openFDs(t *testing.T) int {
	t.Helper()
	d, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(d)
}
