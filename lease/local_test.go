package lease_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

func TestLocalStoreIsExclusiveAcrossGoroutines(t *testing.T) {
	s, err := lease.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	maxIn, runs := exclusive(t, s, 10)
	if maxIn != 1 || runs != 80 {
		t.Fatalf("max %d inside fn at once (want 1), %d of 80 runs", maxIn, runs)
	}
}

// TestFlockExcludesWithinOneProcess checks the platform fact LocalStore
// relies on when two stores of one process share a directory: flock on two
// descriptors of one file conflicts even within a process.
func TestFlockExcludesWithinOneProcess(t *testing.T) {
	dir := t.TempDir()
	a, _ := lease.NewLocalStore(dir)
	b, _ := lease.NewLocalStore(dir)
	ctx := context.Background()
	if _, ok, err := a.Acquire(ctx, "x", "a", 0); !ok || err != nil {
		t.Fatalf("a: %v %v", ok, err)
	}
	if _, ok, err := b.Acquire(ctx, "x", "b", 0); ok || err != nil {
		t.Fatalf("b acquired a lease held through another store: %v %v", ok, err)
	}
}

func TestLocalStoreFilesAndDefaults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "sub")
	s, err := lease.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	names := []string{"../../etc/passwd", "a/b\\c:d*?\x00", strings.Repeat("é", 400)}
	for i, name := range names {
		f, ok, err := s.Acquire(ctx, name, "o", 0)
		if err != nil || !ok || f != int64(i+1) {
			t.Fatalf("Acquire(%q) = %d %v %v; want fence %d (one counter for the directory)", name, f, ok, err, i+1)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		t.Fatalf("%d files in the store directory, want 4 (a .lock per held name and the counter)", len(entries))
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "lockplugin-lease-") {
			t.Fatalf("unexpected file %s", e.Name())
		}
	}
	for _, name := range names {
		if ok, err := s.Release(ctx, name, "o"); !ok || err != nil {
			t.Fatalf("Release(%q) = %v %v", name, ok, err)
		}
	}
	if entries, _ := os.ReadDir(dir); runtime.GOOS != "windows" && len(entries) != 1 {
		t.Fatalf("%d files after release, want 1 (the counter)", len(entries))
	}
	if d, err := lease.NewLocalStore(""); err != nil || d.Dir() != os.TempDir() {
		t.Fatalf(`NewLocalStore("") = %v, %v; want os.TempDir()`, d.Dir(), err)
	}
	file := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(file, nil, 0o600)
	if _, err := lease.NewLocalStore(file); err == nil {
		t.Fatal("NewLocalStore on a file succeeded")
	}
	if _, _, err := s.Acquire(ctx, "", "o", 0); err == nil {
		t.Fatal("empty name accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.Acquire(cctx, "n", "o", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

// fenceFile returns the path of name's .fence file in dir.
func fenceFile(dir, name string) string {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(dir, "lockplugin-lease-"+hex.EncodeToString(sum[:])+".fence")
}

// takeRelease acquires and releases name on s, returning the fence.
func takeRelease(t *testing.T, s *lease.LocalStore, name string) int64 {
	t.Helper()
	ctx := context.Background()
	f, ok, err := s.Acquire(ctx, name, "o", 0)
	if err != nil || !ok {
		t.Fatalf("Acquire(%q) = %v %v", name, ok, err)
	}
	if ok, err := s.Release(ctx, name, "o"); !ok || err != nil {
		t.Fatalf("Release(%q) = %v %v", name, ok, err)
	}
	return f
}

// TestLocalStoreFenceFile: the directory's counter keeps the last fence and
// the end of a reserved block. A record left by another boot, whose last
// fence may not have reached the disk before a power loss, restarts above
// the reserved block; a directory of an earlier version, with a counter per
// name, starts above the highest of them; a corrupt counter is an error,
// not a reset.
func TestLocalStoreFenceFile(t *testing.T) {
	dir := t.TempDir()
	s, _ := lease.NewLocalStore(dir)
	defer s.Close()
	for i := int64(1); i <= 5; i++ {
		if f := takeRelease(t, s, fmt.Sprint("n", i%2)); f != i {
			t.Fatalf("fence %d, want %d", f, i)
		}
	}
	path := filepath.Join(dir, "lockplugin-lease-fences")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b))
	linux := runtime.GOOS == "linux"
	if len(fields) < 3 || fields[0] != "v2" || fields[1] != fmt.Sprintf("%020d", 5) {
		t.Fatalf("counter %q", b)
	}
	if reserved := fields[2]; linux && reserved != fmt.Sprintf("%020d", 1000) || !linux && reserved != fmt.Sprintf("%020d", 5) {
		t.Fatalf("reserved end %s (linux %v)", reserved, linux)
	}

	// Another boot: the last fence (5) is not trusted, the block end is.
	other := fmt.Sprintf("v2 %020d %020d %-36s\n", 5, 1000, "00000000-0000-0000-0000-000000000000")
	if err := os.WriteFile(path, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	s2, _ := lease.NewLocalStore(dir) // a fresh store: the counter not kept open
	defer s2.Close()
	if f := takeRelease(t, s2, "n"); f != 1001 {
		t.Fatalf("after a reboot: fence %d, want 1001 (above the reserved block)", f)
	}
	if f := takeRelease(t, s2, "m"); f != 1002 {
		t.Fatalf("then %d, want 1002", f)
	}

	// An earlier version's directory: a bare counter (42) and a record
	// (reserved up to 5000) per name. The counter starts above both, and
	// a name's old file goes at its next acquire.
	old := t.TempDir()
	if err := os.WriteFile(fenceFile(old, "a"), []byte(fmt.Sprintf("%020d", 42)), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := fmt.Sprintf("v2 %020d %020d %-36s\n", 4100, 5000, "00000000-0000-0000-0000-000000000000")
	if err := os.WriteFile(fenceFile(old, "b"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	s3, _ := lease.NewLocalStore(old)
	if f := takeRelease(t, s3, "a"); f != 5001 {
		t.Fatalf("from an earlier version's counters 42 and 5000: fence %d, want 5001", f)
	}
	if _, err := os.Stat(fenceFile(old, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old counter of a name acquired since is still there: %v", err)
	}
	_ = s3.Close()

	for _, bad := range []string{"garbage", fmt.Sprintf("v2 %020d %020d %-36s\n", 9, 5, "x"), "-3"} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		s4, _ := lease.NewLocalStore(dir)
		_, ok, err := s4.Acquire(context.Background(), "bad", "o", 0)
		if ok || err == nil || !strings.Contains(err.Error(), "corrupt") {
			t.Fatalf("corrupt counter %q: %v %v, want an error naming it corrupt", bad, ok, err)
		}
		_ = s4.Close()
	}
}

// TestLocalStoreIdempotentAcquire: an Acquire repeated by the holder gets
// the same fence; another owner is refused; after release the fence moves
// on.
func TestLocalStoreIdempotentAcquire(t *testing.T) {
	s, _ := lease.NewLocalStore(t.TempDir())
	defer s.Close()
	ctx := context.Background()
	f1, ok, err := s.Acquire(ctx, "n", "a", 0)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	for range 3 {
		if f, ok, err := s.Acquire(ctx, "n", "a", time.Second); !ok || err != nil || f != f1 {
			t.Fatalf("retry by the holder: %d %v %v, want %d", f, ok, err, f1)
		}
	}
	if _, ok, err := s.Acquire(ctx, "n", "b", 0); ok || err != nil {
		t.Fatalf("another owner: %v %v", ok, err)
	}
	if ok, err := s.Release(ctx, "n", "a"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := s.Release(ctx, "n", "a"); ok || err != nil {
		t.Fatalf("second release: %v %v", ok, err)
	}
	if f, ok, err := s.Acquire(ctx, "n", "a", 0); !ok || err != nil || f != f1+1 {
		t.Fatalf("after release: %d %v %v, want %d", f, ok, err, f1+1)
	}
}
