package lease

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/gofrs/flock"
)

// LocalEntry is one lease held in a LocalStore's directory, by any process,
// as LocalStore.Leases reads it.
type LocalEntry struct {
	// Name is the lease name when it is known: held through this
	// LocalStore, or among the names given to Leases. Otherwise it is
	// "sha256:<hex>", the hash the files are named by (names are not
	// stored).
	Name string
	// Owner is the owner token for a lease held through this LocalStore;
	// "" for one held by another process (owners are not stored).
	Owner string
	// Fence is the lease's fencing token: the last fence issued for the
	// name, which only the lock's holder issues.
	Fence int64
	// PID is the holding process where the system says (Linux, from
	// /proc/locks); 0 when unknown.
	PID int
	// File is the lock file.
	File string
}

// procLocks is where Linux lists the file locks held on the machine.
var procLocks = "/proc/locks"

// Leases lists the leases held now in the store's directory, by this
// process or any other, in name order: for an operator's "who holds what"
// (lockcheck who). names are lease names to recognise: a held lease whose
// files are named after one of them is listed under that name.
//
// On Linux the holders are read from /proc/locks, which disturbs nobody.
// Elsewhere each lock file not held through this LocalStore is probed
// with a non-blocking lock that is let go at once; an Acquire by another
// process at that very instant may find the name busy and fail (or wait,
// with WaitAtMost), so probe sparingly there.
func (s *LocalStore) Leases(ctx context.Context, names ...string) ([]LocalEntry, error) {
	if ctx == nil {
		return nil, errors.New("lease: local store: Leases: nil context")
	}
	if s == nil || s.held == nil {
		return nil, errors.New("lease: local store: Leases on a zero LocalStore: use lease.NewLocalStore")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	known := map[string]string{} // file base -> name
	for _, n := range names {
		known[strings.TrimSuffix(filepath.Base(s.path(n)), ".lock")] = n
	}
	mine := map[string]LocalEntry{} // lock file -> entry held through s
	s.mu.Lock()
	for name, h := range s.held {
		if h.pending {
			continue
		}
		f := s.path(name)
		mine[f] = LocalEntry{Name: name, Owner: h.owner, Fence: h.fence, PID: os.Getpid(), File: f}
	}
	s.mu.Unlock()

	dirents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("lease: local store: listing %s: %w", s.dir, err)
	}
	byInode, procOK := readProcLocks()
	var out []LocalEntry
	for _, de := range dirents {
		base, ok := strings.CutSuffix(de.Name(), ".lock")
		if !ok || !strings.HasPrefix(base, localFilePrefix) || de.IsDir() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		path := filepath.Join(s.dir, de.Name())
		if e, ok := mine[path]; ok {
			out = append(out, e)
			continue
		}
		e := LocalEntry{File: path}
		if procOK {
			fi, err := os.Stat(path)
			if err != nil {
				continue // released and removed meanwhile
			}
			pid, held := byInode[inodeOf(fi)]
			if !held {
				continue
			}
			e.PID = pid
		} else {
			fl := flock.New(path)
			free, err := fl.TryLock()
			if err != nil {
				return nil, fmt.Errorf("lease: local store: probing %s: %w", path, err)
			}
			if free {
				_ = fl.Unlock()
				continue
			}
		}
		if n, ok := known[base]; ok {
			e.Name = n
		} else {
			e.Name = "sha256:" + strings.TrimPrefix(base, localFilePrefix)
		}
		e.Fence = readFence(path, filepath.Join(s.dir, base+".fence"))
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// readFence reads a held lease's fence from its .lock file, where its
// holder wrote it, or from legacy, the .fence file of an earlier version,
// when the .lock file has none; 0 when neither can be read.
func readFence(lock, legacy string) int64 {
	if b, err := os.ReadFile(lock); err == nil && len(b) == 20 {
		if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return n
		}
	}
	f, err := os.Open(legacy)
	if err != nil {
		return 0
	}
	defer f.Close()
	buf := make([]byte, fenceRecordLen)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0
	}
	rec, err := parseFenceRecord(buf[:n])
	if err != nil {
		return 0
	}
	return rec.last
}

// readProcLocks maps the inode of every file with a granted flock (not a
// waiter: "->") to the process that holds it; ok is false where
// /proc/locks cannot be read (not Linux).
func readProcLocks() (map[uint64]int, bool) {
	f, err := os.Open(procLocks)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	out := map[uint64]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "3: FLOCK  ADVISORY  WRITE 4242 fd:01:131077 0 EOF"
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		pid, err1 := strconv.Atoi(fields[4])
		dev := strings.Split(fields[5], ":")
		if err1 != nil || len(dev) != 3 {
			continue
		}
		ino, err := strconv.ParseUint(dev[2], 10, 64)
		if err != nil {
			continue
		}
		out[ino] = pid
	}
	return out, sc.Err() == nil
}

// inodeOf returns a file's inode number where the platform's FileInfo
// carries one (an Ino field, as on every Unix); 0 otherwise. Read by
// reflection so that this file builds on every platform.
func inodeOf(fi os.FileInfo) uint64 {
	v := reflect.ValueOf(fi.Sys())
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0
	}
	f := v.FieldByName("Ino")
	if !f.IsValid() || !f.CanUint() {
		return 0
	}
	return f.Uint()
}
