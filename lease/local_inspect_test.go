package lease

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestLocalLeases: a lease held through one LocalStore is listed by
// another on the same directory (from /proc/locks, and by probing where
// that cannot be read), under its name when given and its hash otherwise;
// the holder's own store shows its owner; a released lease is not listed.
func TestLocalLeases(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewManager(a).Acquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	own, err := a.Leases(ctx)
	if err != nil || len(own) != 1 || own[0].Name != "job" || own[0].Owner != l.Owner() || own[0].Fence != l.Fence() {
		t.Fatalf("own listing %+v, %v", own, err)
	}
	for _, proc := range []string{procLocks, "/nonexistent/locks"} {
		saved := procLocks
		procLocks = proc
		got, err := b.Leases(ctx, "job", "other")
		anon, err2 := b.Leases(ctx)
		procLocks = saved
		if err != nil || err2 != nil || len(got) != 1 || got[0].Name != "job" || got[0].Fence != l.Fence() || got[0].Owner != "" {
			t.Fatalf("%s: %+v, %v", proc, got, err)
		}
		if _, statErr := os.Stat(proc); statErr == nil && got[0].PID != os.Getpid() {
			t.Fatalf("%s: pid %d, want %d", proc, got[0].PID, os.Getpid())
		}
		if len(anon) != 1 || !strings.HasPrefix(anon[0].Name, "sha256:") {
			t.Fatalf("%s without names: %+v", proc, anon)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, proc := range []string{procLocks, "/nonexistent/locks"} {
		saved := procLocks
		procLocks = proc
		got, err := b.Leases(ctx, "job")
		procLocks = saved
		if err != nil || len(got) != 0 {
			t.Fatalf("%s after release: %+v, %v", proc, got, err)
		}
	}
	var zero LocalStore
	if _, err := zero.Leases(ctx); err == nil || !strings.Contains(err.Error(), "NewLocalStore") {
		t.Fatalf("zero LocalStore: %v", err)
	}
}
