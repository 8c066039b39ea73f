//go:build unix

package lease

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// otherProcess takes path's lock as another process's LocalStore would:
// its own descriptor on the file the path names, created if missing. The
// returned func lets it go.
func otherProcess(t *testing.T, path string) func() {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("another process's lock on %s: %v", path, err)
	}
	return func() { _ = f.Close() }
}

// TestLocalKeptFileRemovedElsewhere: a store keeps a released name's file
// open for its next acquire. Meanwhile another holder removes that file
// (a store whose kept file is evicted, under its lock), and another
// process takes the name on the path's new file. Locking the kept
// descriptor still succeeds (flock knows nothing of paths): the
// unprotected reuse would let a second holder in, and the test shows it.
// The store notices the file is gone (no link left) and is refused, as
// the name is held; once the other process lets it go, the store gets it
// on the path's new file.
func TestLocalKeptFileRemovedElsewhere(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, _ := NewLocalStore(dir)
	b, _ := NewLocalStore(dir)
	defer a.Close()
	for _, s := range []*LocalStore{a, b} { // both keep the file
		takeTwice(t, s, "x")
	}
	if len(a.idle) != 1 || len(b.idle) != 1 {
		t.Fatalf("kept files: %d and %d, want 1 each", len(a.idle), len(b.idle))
	}
	if err := b.Close(); err != nil { // removes the file, under its lock
		t.Fatal(err)
	}
	path := a.path("x")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the file is still there after b's Close: %v", err)
	}
	letGo := otherProcess(t, path) // on the path's new file

	// Unprotected: a's kept descriptor is on the removed file, which no
	// one else holds: its lock is granted beside the other process's.
	kept := a.idle[0].lock.f
	if err := syscall.Flock(int(kept.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("the kept descriptor was not lockable (%v): the test cannot fail", err)
	}
	t.Log("unprotected: the kept descriptor's lock is granted while another process holds the name")
	_ = syscall.Flock(int(kept.Fd()), syscall.LOCK_UN)

	if _, ok, err := a.Acquire(ctx, "x", "a", 0); ok || err != nil {
		t.Fatalf("a acquired x while another process holds it: %v %v", ok, err)
	}
	if len(a.idle) != 0 {
		t.Fatalf("a still keeps %d files after finding its file removed", len(a.idle))
	}
	letGo()
	if _, ok, err := a.Acquire(ctx, "x", "a", 0); !ok || err != nil {
		t.Fatalf("a after the other process let go: %v %v", ok, err)
	}
	if ok, err := a.Release(ctx, "x", "a"); !ok || err != nil {
		t.Fatal(ok, err)
	}
}

// TestLocalKeptFileHeldElsewhere: a kept file whose name another process
// holds is refused and stays kept (it is only busy), and is not removed
// when the store lets it go (Close, or evicted): only the holder of a
// file's lock removes it. The holder keeps the name; another store is
// refused.
func TestLocalKeptFileHeldElsewhere(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, _ := NewLocalStore(dir)
	c, _ := NewLocalStore(dir)
	defer c.Close()
	takeTwice(t, a, "x")
	path := a.path("x")
	letGo := otherProcess(t, path)
	defer letGo()
	if _, ok, err := a.Acquire(ctx, "x", "a", 0); ok || err != nil {
		t.Fatalf("a through its kept file, while another process holds x: %v %v", ok, err)
	}
	if len(a.idle) != 1 {
		t.Fatalf("a keeps %d files, want 1 (its file is fine, only busy)", len(a.idle))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("a's Close removed the file another process holds: %v", err)
	}
	if _, ok, err := c.Acquire(ctx, "x", "c", 0); ok || err != nil {
		t.Fatalf("c acquired x while another process holds it: %v %v", ok, err)
	}
}

// takeTwice acquires and releases name on s twice: s keeps its file.
func takeTwice(t *testing.T, s *LocalStore, name string) {
	t.Helper()
	ctx := context.Background()
	for range 2 {
		if _, ok, err := s.Acquire(ctx, name, "o", 0); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if ok, err := s.Release(ctx, name, "o"); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
}

// TestLocalKeptFilesBounded: a name taken once has its file removed on
// release; a name taken again has it kept, and a store keeps at most
// localIdleFiles files (and descriptors), the least recently released
// removed first; Close removes the rest.
func TestLocalKeptFilesBounded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _ := NewLocalStore(dir)
	fds := func() int {
		d, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return -1
		}
		return len(d)
	}
	fd0 := fds()
	if _, ok, err := s.Acquire(ctx, "once", "o", 0); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := s.Release(ctx, "once", "o"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := os.Stat(s.path("once")); !os.IsNotExist(err) {
		t.Fatalf("the file of a name taken once is still there: %v", err)
	}
	const names = 100
	for i := range names {
		takeTwice(t, s, fmt.Sprint("n", i))
	}
	files, _ := os.ReadDir(dir)
	t.Logf("%d names taken twice: %d files, %d descriptors more than before", names, len(files), fds()-fd0)
	if len(files) != 1+localIdleFiles {
		t.Fatalf("%d files, want %d (the counter and the kept)", len(files), 1+localIdleFiles)
	}
	if fd0 >= 0 && fds() > fd0+1+localIdleFiles {
		t.Fatalf("%d descriptors more than before, want at most %d", fds()-fd0, 1+localIdleFiles)
	}
	for i := names - localIdleFiles; i < names; i++ { // the last released are the kept
		if _, err := os.Stat(s.path(fmt.Sprint("n", i))); err != nil {
			t.Fatalf("n%d, among the last released, not kept: %v", i, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ = os.ReadDir(dir)
	if len(files) != 1 {
		t.Fatalf("%d files after Close, want 1", len(files))
	}
	if fd0 >= 0 && fds() > fd0 {
		t.Fatalf("%d descriptors more than before after Close", fds()-fd0)
	}
}
