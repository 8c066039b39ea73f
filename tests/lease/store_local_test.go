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
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"

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
	switch os.Getenv(killModeEnv) {
	case "checkpoint":
		next = checkpointFences(filepath.Join(dir, "checkpoint"))
	case "names":
		next = localNewNames(dir)
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

// localNewNames takes and releases a new name every time on a LocalStore
// in dir (as with one lease per order), and returns each fence.
func localNewNames(dir string) func() (int64, error) {
	s, err := lease.NewLocalStore(dir)
	ctx := context.Background()
	run := rand.Int64()
	i := 0
	return func() (int64, error) {
		if err != nil {
			return 0, err
		}
		i++
		name := fmt.Sprintf("%si26-order-%d-%d", namePrefix, run, i)
		fence, ok, err := s.Acquire(ctx, name, "kill-helper", 0)
		if err != nil || !ok {
			return 0, fmt.Errorf("acquire: %v %v", ok, err)
		}
		if _, err := s.Release(ctx, name, "kill-helper"); err != nil {
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

// TestLocalStoreNewNamesFencesSurviveKill: a child process takes and
// releases a new name every time, printing each fence, and is killed with
// SIGKILL at a random point; the first fence of a new process, for yet
// another name, must be above every fence the dead one printed, since the
// directory has one counter. The baseline, a per-name counter removed on
// release (the naive cleanup), hands a name that comes back its first
// fence again.
func TestLocalStoreNewNamesFencesSurviveKill(t *testing.T) {
	naive := map[string]int64{}
	naiveAcquire := func(name string) int64 { naive[name]++; return naive[name] }
	naiveRelease := func(name string) { delete(naive, name) }
	first := naiveAcquire("order-1")
	naiveRelease("order-1")
	again := naiveAcquire("order-1")
	want(t, again <= first, "the baseline did not go back")
	t.Logf("baseline (per-name counter removed on release): fence %d, then %d for the same name", first, again)

	const rounds = 4
	dir := t.TempDir()
	var violations, total int
	for r := range rounds {
		most, printed := killRound(t, dir, "names")
		total += printed
		s, err := lease.NewLocalStore(dir)
		noErr(t, err)
		name := fmt.Sprintf("%si26-after-kill-%d", namePrefix, r)
		fence, ok, err := s.Acquire(context.Background(), name, "survivor", 0)
		noErr(t, err)
		want(t, ok, "a new name is held")
		if fence <= most {
			violations++
			t.Errorf("round %d: first fence after the kill %d, not above the dead process's %d", r, fence, most)
		}
		_, err = s.Release(context.Background(), name, "survivor")
		noErr(t, err)
		noErr(t, s.Close())
	}
	files, err := os.ReadDir(dir)
	noErr(t, err)
	t.Logf("local store, a new name per acquire: %d processes killed after %d fences; %d regressions; %d files left in the directory", rounds, total, violations, len(files))
	// The killed processes' last lock files may stay (killed between
	// acquire and release): one per round at most, plus the counter.
	want(t, len(files) <= rounds+1, "%d files left", len(files))
}

// TestLocalStoreFilesBounded: 100k distinct names acquired and released
// through one LocalStore, every 1000th kept held: the directory ends with a
// file per live lease and the counter, and every fence is above the one
// before it, across names.
func TestLocalStoreFilesBounded(t *testing.T) {
	const names, keepEvery = 100_000, 1000
	dir := t.TempDir()
	s, err := lease.NewLocalStore(dir)
	noErr(t, err)
	defer s.Close()
	ctx := context.Background()
	var last int64
	regressions, live := 0, 0
	start := time.Now()
	for i := range names {
		name := fmt.Sprintf("%si26-order-%d", namePrefix, i)
		fence, ok, err := s.Acquire(ctx, name, "o", 0)
		noErr(t, err)
		want(t, ok, "%s not acquired", name)
		if fence <= last {
			regressions++
		}
		last = fence
		if i%keepEvery == 0 {
			live++
			continue
		}
		ok, err = s.Release(ctx, name, "o")
		noErr(t, err)
		want(t, ok, "%s not released", name)
	}
	took := time.Since(start)
	files, err := os.ReadDir(dir)
	noErr(t, err)
	t.Logf("%d names in %v (%.1f µs each): %d files left for %d live leases; last fence %d; %d regressions",
		names, took.Round(time.Millisecond), float64(took.Microseconds())/names, len(files), live, last, regressions)
	want(t, regressions == 0, "%d fences not above the one before", regressions)
	want(t, len(files) <= live+2, "%d files for %d live leases", len(files), live)
}

// TestLocalStoreRemoveOnReleaseRace: 8 stores (8 open files each time, as
// 8 processes would have) take and release names in a tight loop, each
// holder checking that it is alone. A store keeps the files of the 16
// names it took again and again and released last open for their next
// acquire, and removes the others (under their lock); an acquirer that
// locked a file removed meanwhile, fresh or kept, must notice and start
// again. Run on 3 names
// (every file kept, and locked again through the kept descriptor) and on
// 20 (more than a store keeps: files removed all the time). The baseline,
// which unlinks on release without that check, lets two holders in at
// once.
func TestLocalStoreRemoveOnReleaseRace(t *testing.T) {
	const workers, iters = 8, 3000
	hot := []string{namePrefix + "i26-a", namePrefix + "i26-b", namePrefix + "i26-c"}
	var many []string
	for i := range 20 {
		many = append(many, fmt.Sprintf("%si27-%d", namePrefix, i))
	}

	run := func(names []string, acquire func(w int, name string) (release func(), ok bool)) (overlaps, grants int64) {
		inside := make([]atomic.Int32, len(names))
		var over, granted atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range iters {
					k := (w + i) % len(names)
					release, ok := acquire(w, names[k])
					if !ok {
						continue
					}
					granted.Add(1)
					if inside[k].Add(1) > 1 {
						over.Add(1)
					}
					for range 50 { // a little work inside
						runtime.Gosched()
					}
					inside[k].Add(-1)
					release()
				}
			}()
		}
		wg.Wait()
		return over.Load(), granted.Load()
	}

	// Baseline: flock, then unlink and close on release, no inode check.
	naiveDir := t.TempDir()
	over, grants := run(hot, func(_ int, name string) (func(), bool) {
		path := filepath.Join(naiveDir, name+".lock")
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, false
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			_ = f.Close()
			return nil, false
		}
		return func() { _ = os.Remove(path); _ = f.Close() }, true
	})
	t.Logf("baseline (unlink on release, no inode check): %d overlapping holders in %d grants", over, grants)
	want(t, over > 0, "the baseline never let two holders in: the test cannot fail")

	for _, names := range [][]string{hot, many} {
		dir := t.TempDir()
		stores := make([]*lease.LocalStore, workers)
		for w := range stores {
			var err error
			stores[w], err = lease.NewLocalStore(dir)
			noErr(t, err)
		}
		ctx := context.Background()
		var errs atomic.Int64
		over, grants = run(names, func(w int, name string) (func(), bool) {
			owner := fmt.Sprint("w", w)
			_, ok, err := stores[w].Acquire(ctx, name, owner, 0)
			if err != nil {
				errs.Add(1)
			}
			return func() {
				if ok, err := stores[w].Release(ctx, name, owner); !ok || err != nil {
					errs.Add(1)
				}
			}, ok
		})
		files, _ := os.ReadDir(dir)
		for _, s := range stores {
			noErr(t, s.Close())
		}
		closed, _ := os.ReadDir(dir)
		t.Logf("LocalStore, %d names: %d overlapping holders in %d grants, %d errors, %d files left (%d after Close)", len(names), over, grants, errs.Load(), len(files), len(closed))
		want(t, over == 0, "%d overlapping holders", over)
		want(t, errs.Load() == 0, "%d errors", errs.Load())
		want(t, grants > 0, "nothing granted")
		want(t, len(files) <= 1+len(names), "%d files left after every release (%d names)", len(files), len(names))
		want(t, len(closed) <= 1, "%d files left after Close", len(closed))
	}
}

// BenchmarkLocalNewName: one acquire and release of a new name each time
// (one lease per order), through LocalStore and through gofrs/flock on a
// new file each time (the baseline keeps its files; LocalStore removes
// them and issues a fence from the directory's counter).
func BenchmarkLocalNewName(b *testing.B) {
	ctx := context.Background()
	b.Run("lockplugin", func(b *testing.B) {
		s, err := lease.NewLocalStore(b.TempDir())
		noErr(b, err)
		defer s.Close()
		for i := range b.N {
			name := fmt.Sprintf("%si26-order-%d", namePrefix, i)
			if _, ok, err := s.Acquire(ctx, name, "o", 0); !ok || err != nil {
				b.Fatal(ok, err)
			}
			if ok, err := s.Release(ctx, name, "o"); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("baseline=gofrs-flock", func(b *testing.B) {
		dir := b.TempDir()
		for i := range b.N {
			f := flock.New(filepath.Join(dir, fmt.Sprintf("order-%d.lock", i)))
			if ok, err := f.TryLock(); !ok || err != nil {
				b.Fatal(ok, err)
			}
			if err := f.Unlock(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
