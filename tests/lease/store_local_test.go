package lease_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

const (
	killDirEnv  = "LEASE_TEST_KILL_DIR"
	killModeEnv = "LEASE_TEST_KILL_MODE"
	killName    = namePrefix + "kill-9"
	fenceLine   = "fence "
)

// TestLocalStoreKillHelperProcess is not a test: TestLocalStoreFencesSurviveKill
// runs the test binary again with only this function and the environment
// set. It then takes and releases one lease in a loop, printing each fence
// as soon as it has it, until it is killed.
func TestLocalStoreKillHelperProcess(t *testing.T) {
	dir := os.Getenv(killDirEnv)
	if dir == "" {
		t.Skip("helper process for TestLocalStoreFencesSurviveKill")
	}
	next := localFences(dir)
	if os.Getenv(killModeEnv) == "checkpoint" {
		next = checkpointFences(filepath.Join(dir, "checkpoint"))
	}
	for {
		fence, err := next()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		if _, err := os.Stdout.WriteString(fenceLine + strconv.FormatInt(fence, 10) + "\n"); err != nil {
			os.Exit(2)
		}
	}
}

// localFences takes and releases killName on a LocalStore in dir, and
// returns each fence.
func localFences(dir string) func() (int64, error) {
	s, err := lease.NewLocalStore(dir)
	ctx := context.Background()
	return func() (int64, error) {
		if err != nil {
			return 0, err
		}
		fence, ok, err := s.Acquire(ctx, killName, "kill-helper", 0)
		if err != nil || !ok {
			return 0, fmt.Errorf("acquire: %v %v", ok, err)
		}
		if _, err := s.Release(ctx, killName, "kill-helper"); err != nil {
			return 0, err
		}
		return fence, nil
	}
}

// checkpointFences is the unprotected baseline: the tempting way to save
// the disk writes, counting in memory and writing the counter to path
// every 100 fences, so a restart goes on from the last checkpoint.
func checkpointFences(path string) func() (int64, error) {
	var n int64 = -1
	return func() (int64, error) {
		if n < 0 {
			b, err := os.ReadFile(path)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return 0, err
			}
			n, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		}
		n++
		if n%100 == 0 {
			if err := os.WriteFile(path, []byte(strconv.FormatInt(n, 10)), 0o600); err != nil {
				return 0, err
			}
		}
		return n, nil
	}
}

// killRound starts the helper in mode on dir, lets it print between 50
// and 2,500 fences (so that the kill lands anywhere in a block of 1,000),
// kills it with SIGKILL, and returns the greatest fence it printed and
// how many it printed.
func killRound(t *testing.T, dir, mode string) (most int64, printed int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLocalStoreKillHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), killDirEnv+"="+dir, killModeEnv+"="+mode)
	stdout, err := cmd.StdoutPipe()
	noErr(t, err)
	cmd.Stderr = os.Stderr
	noErr(t, cmd.Start())
	killAt := 50 + rand.IntN(2450)
	sc := bufio.NewScanner(stdout)
	deadline := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	killed := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, fenceLine) {
			continue // the test binary's own output
		}
		f, err := strconv.ParseInt(strings.TrimPrefix(line, fenceLine), 10, 64)
		noErr(t, err, "helper printed ", line)
		most = max(most, f)
		printed++
		if printed == killAt && !killed {
			noErr(t, cmd.Process.Signal(os.Kill)) // SIGKILL: no release, no cleanup
			killed = true
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	_ = cmd.Wait()
	want(t, killed, "helper stopped after %d fences before it was killed", printed)
	return most, printed
}

// TestLocalStoreFencesSurviveKill: a child process takes and releases a
// local lease in a loop, printing every fence, and is killed with SIGKILL
// at a random point; a new process's first fence must be above every
// fence the dead one printed. 8 rounds, on one directory. The baseline,
// a counter written every 100 fences, goes back after a kill.
func TestLocalStoreFencesSurviveKill(t *testing.T) {
	const rounds = 8
	base := t.TempDir()
	var backwards int
	for range rounds {
		most, _ := killRound(t, base, "checkpoint")
		next, err := checkpointFences(filepath.Join(base, "checkpoint"))()
		noErr(t, err)
		if next <= most {
			backwards++
		}
	}
	t.Logf("baseline (checkpoint every 100): the first fence after a kill was not above the dead process's in %d of %d rounds", backwards, rounds)
	want(t, backwards > 0, "the baseline never went back: the test cannot fail")

	dir := t.TempDir()
	var violations, total int
	var last int64
	for r := range rounds {
		most, printed := killRound(t, dir, "store")
		total += printed
		s, err := lease.NewLocalStore(dir)
		noErr(t, err)
		fence, ok, err := s.Acquire(context.Background(), killName, "survivor", 0)
		noErr(t, err)
		want(t, ok, "the dead helper's lease is still held")
		if fence <= most {
			violations++
			t.Errorf("round %d: first fence after the kill %d, not above the dead process's %d", r, fence, most)
		}
		want(t, most > last, "round %d: the helper's fences %d did not go above the last round's %d", r, most, last)
		last = fence
		_, err = s.Release(context.Background(), killName, "survivor")
		noErr(t, err)
		noErr(t, s.Close())
	}
	t.Logf("local store: %d processes killed after %d fences in all; %d times the next fence was not above every printed one; last fence %d", rounds, total, violations, last)
}
