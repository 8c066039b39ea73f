package lease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// LocalStore keeps leases as flock(2) locks on files in one directory, for
// processes that share a machine (or a file system with working flock).
// Because the operating system drops a dead process's locks, a holder that
// crashes frees its leases at once; TTLs are therefore ignored: a lease
// lasts until it is released or its process ends.
//
// Each name has two small files in the directory, named from the SHA-256
// of the name so that any name is safe: lockplugin-lease-<hash>.lock,
// which is locked, and lockplugin-lease-<hash>.fence, which keeps the
// fencing counter (written only by the lock's holder). They stay after
// release, so that the counter survives; deleting them resets it.
//
// Leases held through one LocalStore also exclude each other inside the
// process, whatever the platform's flock does for one process.
type LocalStore struct {
	dir string

	mu   sync.Mutex
	held map[string]*localHold
}

type localHold struct {
	owner   string
	lock    *flock.Flock
	pending bool // acquired but not yet returned to the caller
}

// localFilePrefix starts every file LocalStore creates.
const localFilePrefix = "lockplugin-lease-"

// NewLocalStore returns a LocalStore keeping its files in dir, created if
// missing; "" means os.TempDir(). Processes that must exclude each other
// use the same dir.
func NewLocalStore(dir string) (*LocalStore, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lease: local store directory: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("lease: local store directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("lease: local store: %s is not a directory", dir)
	}
	return &LocalStore{dir: dir, held: map[string]*localHold{}}, nil
}

// Dir returns the directory holding the lock files.
func (s *LocalStore) Dir() string { return s.dir }

// path returns the path of name's files without their extension.
func (s *LocalStore) path(name string) string {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(s.dir, localFilePrefix+hex.EncodeToString(sum[:]))
}

// Acquire takes name's file lock without blocking and bumps its fencing
// counter. ttl is ignored.
func (s *LocalStore) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	if err := checkStoreArgs(ctx, name, owner); err != nil {
		return 0, false, err
	}
	s.mu.Lock()
	if _, ok := s.held[name]; ok {
		s.mu.Unlock()
		return 0, false, nil
	}
	h := &localHold{owner: owner, pending: true}
	s.held[name] = h
	s.mu.Unlock()

	fence, ok, err := s.lock(name, h)

	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		delete(s.held, name)
		return 0, false, err
	}
	h.pending = false
	return fence, true, nil
}

func (s *LocalStore) lock(name string, h *localHold) (int64, bool, error) {
	base := s.path(name)
	fl := flock.New(base + ".lock")
	ok, err := fl.TryLock()
	if err != nil {
		return 0, false, fmt.Errorf("lease: local store: locking %s: %w", fl.Path(), err)
	}
	if !ok {
		return 0, false, nil
	}
	fence, err := bumpFence(base + ".fence")
	if err != nil {
		_ = fl.Unlock()
		return 0, false, err
	}
	h.lock = fl
	return fence, true, nil
}

// fenceWidth is the fixed width of the decimal counter in a .fence file:
// one 20-byte write replaces it whole, never leaving it half written.
const fenceWidth = 20

// bumpFence increments the counter in path and returns the new value. The
// caller holds the name's file lock, which makes it the only writer.
func bumpFence(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("lease: local store: opening fence file: %w", err)
	}
	defer f.Close()
	buf := make([]byte, fenceWidth)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("lease: local store: reading %s: %w", path, err)
	}
	var last int64
	if s := strings.TrimSpace(string(buf[:n])); s != "" {
		last, err = strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("lease: local store: %s is corrupt: %w", path, err)
		}
	}
	next := last + 1
	if _, err := f.WriteAt(fmt.Appendf(nil, "%0*d", fenceWidth, next), 0); err != nil {
		return 0, fmt.Errorf("lease: local store: writing %s: %w", path, err)
	}
	// Synced so that a fence handed out survives a machine crash too.
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("lease: local store: syncing %s: %w", path, err)
	}
	return next, nil
}

// Release unlocks name's file if owner holds it.
func (s *LocalStore) Release(ctx context.Context, name, owner string) (bool, error) {
	if err := checkStoreArgs(ctx, name, owner); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[name]
	if !ok || h.pending || h.owner != owner {
		return false, nil
	}
	if err := h.lock.Unlock(); err != nil {
		return false, fmt.Errorf("lease: local store: unlocking %s: %w", h.lock.Path(), err)
	}
	delete(s.held, name)
	return true, nil
}

// Refresh reports whether owner holds name; ttl is ignored, since a local
// lease lasts until it is released or its process ends.
func (s *LocalStore) Refresh(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if err := checkStoreArgs(ctx, name, owner); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[name]
	return ok && !h.pending && h.owner == owner, nil
}

func checkStoreArgs(ctx context.Context, name, owner string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if name == "" {
		return errors.New("lease: empty lock name")
	}
	if owner == "" {
		return errors.New("lease: empty owner")
	}
	return nil
}

var _ Store = (*LocalStore)(nil)
