package lease_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

const (
	helperDirEnv  = "LEASE_TEST_HELPER_DIR"
	helperNameEnv = "LEASE_TEST_HELPER_NAME"
	heldLine      = "lease-helper: held fence="
)

// TestLocalStoreHelperProcess is not a test: TestLocalStoreAcrossProcesses
// runs the test binary again with only this function and the environment
// set; it then takes the lease, says so on stdout, and blocks until killed.
func TestLocalStoreHelperProcess(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("helper process for TestLocalStoreAcrossProcesses")
	}
	s, err := lease.NewLocalStore(dir)
	if err != nil {
		fmt.Println("lease-helper: error", err)
		os.Exit(2)
	}
	l, err := lease.NewManager(s).Acquire(context.Background(), os.Getenv(helperNameEnv))
	if err != nil {
		fmt.Println("lease-helper: error", err)
		os.Exit(2)
	}
	fmt.Printf("%s%d\n", heldLine, l.Fence())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until killed
	os.Exit(3)
}

// TestLocalStoreAcrossProcesses: a second process holds the lease; this
// one is refused; when the holder is killed (no release, no cleanup), the
// operating system drops its flock and a waiter here gets the lease with a
// greater fence.
func TestLocalStoreAcrossProcesses(t *testing.T) {
	dir, name := t.TempDir(), namePrefix+"cross-process ✓"

	// The baseline: with separate directories, the two processes do not
	// see each other, and both hold "the" lease.
	otherDir := t.TempDir()
	child, fence0 := startHolder(t, otherDir, name)
	mine, err := lease.NewLocalStore(dir)
	noErr(t, err)
	l, err := lease.NewManager(mine).Acquire(context.Background(), name)
	noErr(t, err, "baseline: separate directories must not exclude each other")
	noErr(t, l.Release(context.Background()))
	t.Logf("baseline: with separate directories both processes held it (child fence %d)", fence0)
	noErr(t, child.Process.Kill())
	_ = child.Wait()

	child, fence1 := startHolder(t, dir, name)
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()

	s := newSignalStore(mine)
	m := lease.NewManager(s, lease.PollInterval(10*time.Millisecond))
	_, err = m.Acquire(context.Background(), name)
	isErr(t, err, lease.ErrNotAcquired) // held by the other process
	<-s.refused

	got := make(chan *lease.Lease, 1)
	errc := make(chan error, 1)
	go func() {
		l, err := m.Acquire(context.Background(), name, lease.WaitAtMost(30*time.Second))
		errc <- err
		got <- l
	}()
	<-s.refused // the waiter found it held and is polling
	killed := time.Now()
	noErr(t, child.Process.Kill())
	_ = child.Wait()
	noErr(t, <-errc)
	l = <-got
	t.Logf("holder killed; waiter got the lease %v later, fence %d after the dead holder's %d",
		time.Since(killed).Round(time.Millisecond), l.Fence(), fence1)
	want(t, l.Fence() > fence1, "fence %d not above the dead holder's %d", l.Fence(), fence1)
	noErr(t, l.Release(context.Background()))
}

// startHolder starts the helper process holding name in dir and returns
// once it holds it, with its fence.
func startHolder(t *testing.T, dir, name string) (*exec.Cmd, int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLocalStoreHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperDirEnv+"="+dir, helperNameEnv+"="+name)
	stdout, err := cmd.StdoutPipe()
	noErr(t, err)
	stdin, err := cmd.StdinPipe() // kept open: the helper blocks on it
	noErr(t, err)
	t.Cleanup(func() { _ = stdin.Close() })
	cmd.Stderr = os.Stderr
	noErr(t, cmd.Start())

	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "lease-helper:") {
				line <- sc.Text()
				break
			}
		}
		close(line)
		for sc.Scan() { // drain
		}
	}()
	select {
	case l, ok := <-line:
		want(t, ok, "helper exited without taking the lease")
		want(t, strings.HasPrefix(l, heldLine), "helper: %s", l)
		fence, err := strconv.ParseInt(strings.TrimPrefix(l, heldLine), 10, 64)
		noErr(t, err)
		return cmd, fence
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("helper did not take the lease within 60 s")
	}
	return nil, 0
}
