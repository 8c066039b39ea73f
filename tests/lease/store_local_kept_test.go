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

// Kept lock files across processes (issue 27): a LocalStore keeps the
// files of names it takes again and again open for their next acquire, up
// to 16, and removes the least recently released beyond them under their
// lock. Processes that each cycle through more names than that remove
// files that the others keep open, lock again, or are opening: each must
// notice a file removed under it and start again on the path's new one.

const (
	keptDirEnv   = "LEASE_TEST_KEPT_DIR"
	keptRunEnv   = "LEASE_TEST_KEPT_RUN"
	keptNames    = 24 // more than a store keeps (16)
	keptInsideUS = 20
)

// TestLocalKeptHelperProcess is not a test: TestLocalKeptFilesAcrossProcesses
// runs the test binary again with only this function and the environment
// set. It takes and releases names in a loop through one LocalStore and
// prints each hold: "H <name index> <fence> <start> <end>" (Unix ns).
func TestLocalKeptHelperProcess(t *testing.T) {
	dir := os.Getenv(keptDirEnv)
	if dir == "" {
		t.Skip("helper process for TestLocalKeptFilesAcrossProcesses")
	}
	run, _ := time.ParseDuration(os.Getenv(keptRunEnv))
	s, err := lease.NewLocalStore(dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	ctx := context.Background()
	failed := 0
	step := 1 + os.Getpid()%5 // processes walk the names in different orders
	for i, end := 0, time.Now().Add(run); time.Now().Before(end); i++ {
		k := (i * step) % keptNames
		name := fmt.Sprintf("%si27-kept-%d", namePrefix, k)
		fence, ok, err := s.Acquire(ctx, name, "o", 0)
		if err != nil {
			failed++
			continue
		}
		if !ok {
			continue
		}
		in := time.Now()
		for time.Since(in) < keptInsideUS*time.Microsecond {
			runtime.Gosched()
		}
		outAt := time.Now()
		if ok, err := s.Release(ctx, name, "o"); !ok || err != nil {
			failed++
		}
		fmt.Fprintln(out, "H", k, fence, in.UnixNano(), outAt.UnixNano())
	}
	if err := s.Close(); err != nil {
		failed++
	}
	fmt.Fprintln(out, "R", failed)
	_ = out.Flush()
	os.Exit(0)
}

// TestLocalKeptFilesAcrossProcesses: 4 processes take and release 24
// names (more than a store keeps) for 2 s, each through its own store:
// files are kept, locked again, removed and created again all the time.
// No two holds of a name overlap, each holder's fence is above the
// previous holder's of the name, and once all have closed their stores
// only the counter is left.
func TestLocalKeptFilesAcrossProcesses(t *testing.T) {
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("a few seconds of contention between processes")
	}
	dir := t.TempDir()
	const procs = 4
	type hold struct{ fence, in, out int64 }
	byName := make([][]hold, keptNames)
	failed, reported := 0, 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLocalKeptHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), keptDirEnv+"="+dir, keptRunEnv+"=2s")
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
				case len(f) == 5 && f[0] == "H":
					byName[n[1]] = append(byName[n[1]], hold{n[2], n[3], n[4]})
				case len(f) == 2 && f[0] == "R":
					failed += int(n[1])
					reported++
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() || reported != procs {
		t.Fatalf("%d of %d helpers reported", reported, procs)
	}
	holds, overlaps, regressed := 0, 0, 0
	for _, hs := range byName {
		slices.SortFunc(hs, func(a, b hold) int { return int(a.in - b.in) })
		holds += len(hs)
		for i := 1; i < len(hs); i++ {
			if hs[i].in < hs[i-1].out {
				overlaps++
			}
			if hs[i].fence <= hs[i-1].fence {
				regressed++
			}
		}
	}
	files, err := os.ReadDir(dir)
	noErr(t, err)
	t.Logf("%d processes, %d names, 2s: %d holds, %d overlaps, %d fence regressions, %d errors; %d files left after Close",
		procs, keptNames, holds, overlaps, regressed, failed, len(files))
	want(t, holds > 0, "nothing held")
	want(t, overlaps == 0 && regressed == 0, "%d overlaps, %d fence regressions", overlaps, regressed)
	want(t, failed == 0, "%d errors", failed)
	want(t, len(files) == 1, "%d files left after every store closed, want the counter alone", len(files))
}
