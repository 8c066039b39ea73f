package lease_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	for _, name := range []string{"../../etc/passwd", "a/b\\c:d*?\x00", strings.Repeat("é", 400)} {
		f, ok, err := s.Acquire(ctx, name, "o", 0)
		if err != nil || !ok || f != 1 {
			t.Fatalf("Acquire(%q) = %d %v %v", name, f, ok, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 6 {
		t.Fatalf("%d files in the store directory, want 6 (a .lock and a .fence per name)", len(entries))
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "lockplugin-lease-") {
			t.Fatalf("unexpected file %s", e.Name())
		}
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
