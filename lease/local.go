package lease

import (
	"bytes"
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
)

// LocalStore keeps leases as flock(2) locks on files in one directory, for
// processes that share a machine (or a file system with working flock).
// Because the operating system drops a dead process's locks, a holder that
// crashes frees its leases at once; TTLs are therefore ignored: a lease
// lasts until it is released or its process ends.
//
// Each held name has one small file in the directory, named from the
// SHA-256 of the name so that any name is safe: lockplugin-lease-<hash>.lock,
// which is locked and says the lease's fence. Release removes it (on
// Unix), unless the name is taken again and again: a LocalStore keeps the
// file of a name released a second time (among the last 64 names it
// released) open, unlocked, for the name's next acquire, which then costs
// a lock and no file creation; it keeps up to 16 such files
// (localIdleFiles), removing the least recently released beyond them, and
// Close removes them all. So the directory holds one file per live lease,
// one counter, and at most 16 released files per open LocalStore (or per
// process killed meanwhile), however many names have come and gone. A
// name taken once (a new name per order) has its file removed on release,
// as if nothing were kept. Removal is safe against an acquirer that opened
// the file just before: the remover holds the file's lock while it
// unlinks it, and an acquirer that wins a lock checks that the file it
// locked is still the one the path names (same inode; for a kept file,
// that it still has a link, lock files being never renamed), and starts
// again otherwise. Removing a kept file beyond the 16, or at Close, takes
// its lock again for that instant, so a plain Acquire by another process
// at that very moment is refused as if the name were held (a waiting one
// tries again). Elsewhere (Windows, which cannot remove an open file) the
// .lock files stay, and none is kept open once released.
//
// Fences come from one counter for the whole directory,
// lockplugin-lease-fences, so every fence is above every fence issued
// before it in the directory, for any name; a new name costs no disk sync
// of its own. Fences never go back, after a crashed process or a crashed
// machine, yet an acquire does not wait for the disk: the counter keeps
// the last fence issued and the end of a block of fences reserved ahead
// (1000), and only reserving a block is synced to disk. A process killed at
// any moment loses nothing, since its writes are in the kernel's page
// cache, which every process reads. After a reboot, when the last fence
// may not have reached the disk, counting restarts above the reserved
// block; the counter records the boot (Linux's boot_id) to tell. Where the
// boot cannot be identified (systems other than Linux), every fence is
// synced. Processes take turns on the counter with a lock of their own on
// it. Deleting the counter resets the fences.
//
// A directory used by an earlier version, with one .fence file per name,
// is taken over: the counter starts above the highest of them, and each
// name's old file is removed at its next acquire (a LocalStore lists them
// once, when it opens the counter). Upgrade every process sharing a
// directory together.
//
// Leases held through one LocalStore also exclude each other inside the
// process, whatever the platform's flock does for one process. An Acquire
// by the owner that already holds the name through the same LocalStore (a
// retry) returns the lease's fence again. A LocalStore keeps the counter
// open between acquires; Close closes it (on Windows, before the directory
// can be removed).
//
// File descriptors: each held lease keeps its .lock file open (a flock
// lives on an open file), so a process holding N leases through a
// LocalStore needs up to N + 17 descriptors besides its own (the fence
// counter, and up to 16 released files kept for reuse on Unix, which
// Close closes). An acquire beyond the process's limit fails with the
// operating system's "too many open files" (EMFILE), not ErrNotAcquired:
// at the common default ulimit -n of 1024 that is around the 950th lease
// held at once. Raise the limit (ulimit -n, or LimitNOFILE= in a systemd
// unit) above the most leases a process holds plus its other files, or
// use a table or Redis store for that many.
type LocalStore struct {
	dir    string
	prefix string // filepath.Join(dir, localFilePrefix), see path

	mu   sync.Mutex
	held map[string]*localHold
	// idle are the holds of released names whose lock files are kept
	// open, unlocked, for their next acquire (Unix): least recently
	// released first, at most localIdleFiles.
	idle []*localHold
	// recent are the last localRecentNames names released and not kept
	// (recentRing, oldest at recentNext), see releasedBefore.
	recent     map[string]struct{}
	recentRing [localRecentNames]string
	recentNext int

	counterMu   sync.Mutex // one goroutine at a time on the counter
	counter     *os.File   // the open counter, see bump
	counterPath string
	// legacy are the lock paths of names with an earlier version's .fence
	// file, listed when the counter was opened; nil when there are none.
	legacy map[string]bool
	buf    [fenceRecordLen]byte // the counter's record, read and written under counterMu
}

// localIdleFiles bounds the released lock files a LocalStore keeps open.
const localIdleFiles = 16

// localRecentNames is how many names released once a LocalStore
// remembers, to keep their files at their second release.
const localRecentNames = 64

// counterFile names the directory's fence counter.
const counterFile = localFilePrefix + "fences"

type localHold struct {
	name    string
	owner   string
	lock    *fileLock
	fence   int64
	pending bool     // acquired but not yet returned to the caller
	reused  bool     // taken through a kept file (s.idle)
	rec     [20]byte // the fence as written into the lock file
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
	return &LocalStore{
		dir:         dir,
		prefix:      filepath.Join(dir, localFilePrefix),
		counterPath: filepath.Join(dir, counterFile),
		held:        map[string]*localHold{},
	}, nil
}

// Dir returns the directory holding the lock files ("" for a LocalStore
// not made by NewLocalStore).
func (s *LocalStore) Dir() string {
	if s == nil {
		return ""
	}
	return s.dir
}

// check refuses a LocalStore not made by NewLocalStore.
func (s *LocalStore) check() error {
	if s == nil || s.dir == "" || s.held == nil {
		return errZeroLocal
	}
	return nil
}

// path returns the path of name's lock file, which is also the key of its
// queue in the process (local_queue.go).
func (s *LocalStore) path(name string) string {
	sum := sha256.Sum256([]byte(name))
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	var b strings.Builder
	b.Grow(len(s.prefix) + len(h) + len(".lock"))
	b.WriteString(s.prefix)
	b.Write(h[:])
	b.WriteString(".lock")
	return b.String()
}

// Acquire takes name's file lock without blocking and bumps its fencing
// counter. When owner already holds name through s, it returns the same
// fence. ttl is ignored.
func (s *LocalStore) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	if err := s.checkArgs(ctx, name, owner); err != nil {
		return 0, false, err
	}
	return s.take(ctx, name, owner, nil)
}

// take is one attempt at name for owner: by w, the head of the process's
// queue for it (local_queue.go), or by a plain Acquire (w nil), which is
// refused while the process has waiters for name. A waiter that takes name
// leaves the queue.
func (s *LocalStore) take(ctx context.Context, name, owner string, w *localWaiter) (int64, bool, error) {
	s.mu.Lock()
	if h, ok := s.held[name]; ok {
		mine := !h.pending && h.owner == owner
		var fence int64
		if mine { // written by lock before pending was cleared under s.mu
			fence = h.fence
		}
		s.mu.Unlock()
		if mine {
			if w != nil {
				leaveQueue(h.lock.path, w)
			}
			return fence, true, nil
		}
		return 0, false, nil
	}
	// A kept file: a hold to reuse, and the path without hashing the name.
	h := s.takeIdle(name)
	var key string
	if h != nil {
		key = h.lock.path
	} else {
		key = s.path(name)
	}
	if !mayTake(key, w) {
		if h != nil {
			s.keepIdle(h)
		}
		s.mu.Unlock()
		return 0, false, nil
	}
	if h == nil {
		h = &localHold{name: name}
	} else {
		h.reused = true
	}
	h.owner, h.pending = owner, true
	s.held[name] = h
	s.mu.Unlock()

	fence, ok, err := s.lock(ctx, key, h)
	if ok {
		taken(key, w)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		delete(s.held, name)
		if h.lock != nil { // a kept file, held elsewhere: kept still
			s.keepIdle(h)
		}
		return 0, false, err
	}
	h.pending = false
	return fence, true, nil
}

// takeIdle takes name's hold, with its kept lock file, out of s.idle;
// nil if none. Called with s.mu held.
func (s *LocalStore) takeIdle(name string) *localHold {
	for i, h := range s.idle {
		if h.name == name {
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			return h
		}
	}
	return nil
}

// releasedBefore reports whether name is among the last localRecentNames
// names released through s and not kept, and records it there if not: a
// name released a second time is taken again and again, and its file is
// worth keeping; a name taken once (a new name per order, say) has its
// file removed at once, as if nothing were kept. Called with s.mu held.
func (s *LocalStore) releasedBefore(name string) bool {
	if _, ok := s.recent[name]; ok {
		return true
	}
	if s.recent == nil {
		s.recent = make(map[string]struct{}, localRecentNames)
	}
	if old := s.recentRing[s.recentNext]; old != "" {
		delete(s.recent, old)
	}
	s.recentRing[s.recentNext] = name
	s.recentNext = (s.recentNext + 1) % localRecentNames
	s.recent[name] = struct{}{}
	return false
}

// keepIdle keeps h, the hold of a released name, with its lock file open
// for the name's next acquire; the least recently released beyond
// localIdleFiles has its file removed. Called with s.mu held.
func (s *LocalStore) keepIdle(h *localHold) {
	s.idle = append(s.idle, h)
	if len(s.idle) > localIdleFiles {
		old := s.idle[0]
		s.idle = append(s.idle[:0], s.idle[1:]...)
		old.lock.discard()
	}
}

// lock takes the lock file at key for h: h.lock, the file kept open
// since this store released the name, if there is one, else the file at
// key opened (and created) anew.
func (s *LocalStore) lock(ctx context.Context, key string, h *localHold) (int64, bool, error) {
	if h.lock != nil {
		ok, err := h.lock.relock()
		if err == nil && !ok {
			return 0, false, nil // held elsewhere: h.lock kept (take)
		}
		if !ok {
			h.lock = nil // closed by relock (removed since): open anew
		}
	}
	if h.lock == nil {
		fl, ok, err := tryLockFile(key)
		if err != nil {
			return 0, false, fmt.Errorf("lease: local store: locking %s: %w", key, err)
		}
		if !ok {
			return 0, false, nil
		}
		h.lock = fl
	}
	fl := h.lock
	fence, legacy, err := s.bump(ctx, key)
	if err == nil && fl.f != nil {
		// For Leases (lockcheck who): the fence, in the page cache only.
		_, err = fl.f.WriteAt(appendPadded(h.rec[:0], fence), 0)
	}
	if err != nil {
		_ = fl.unlock(false)
		h.lock = nil
		return 0, false, err
	}
	if legacy {
		// An earlier version's counter for this name: the directory's
		// counter started above it (takeOver), so it is no longer needed.
		_ = os.Remove(strings.TrimSuffix(key, ".lock") + ".fence")
	}
	h.fence = fence
	return fence, true, nil
}

// fenceBlock is how many fences one sync of the counter reserves.
const fenceBlock = 1000

// fenceRecord is the content of the counter (and of an earlier version's
// per-name .fence files): the last fence issued, the
// end of the reserved block (on disk: no fence above it was ever issued
// before the block was synced), and the boot during which last was
// written. Written whole by one WriteAt at offset 0, within one disk
// sector.
type fenceRecord struct {
	last, reserved int64
	boot           string
}

// fenceRecordLen is the fixed length of a record: "v2", two 20-digit
// numbers, a boot id of up to 36 characters, spaces and a newline.
const fenceRecordLen = 2 + 1 + 20 + 1 + 20 + 1 + 36 + 1

func (r fenceRecord) encode() []byte {
	return r.appendTo(make([]byte, 0, fenceRecordLen))
}

// appendTo appends the record to b.
func (r fenceRecord) appendTo(b []byte) []byte {
	b = append(b, "v2 "...)
	b = appendPadded(b, r.last)
	b = append(b, ' ')
	b = appendPadded(b, r.reserved)
	b = append(b, ' ')
	b = append(b, r.boot...)
	for len(b) < fenceRecordLen-1 {
		b = append(b, ' ')
	}
	return append(b, '\n')
}

// appendPadded appends n (not negative) as 20 decimal digits.
func appendPadded(b []byte, n int64) []byte {
	var d [20]byte
	digits := strconv.AppendInt(d[:0], n, 10)
	for range 20 - len(digits) {
		b = append(b, '0')
	}
	return append(b, digits...)
}

// parseFenceRecord reads a record, or the bare 20-digit counter that
// earlier versions wrote (synced on every acquire, so it is its own
// reserved end). An empty file is a counter at 0.
func parseFenceRecord(b []byte) (fenceRecord, error) {
	rec, boot, err := parseFenceBytes(b)
	rec.boot = string(boot)
	return rec, err
}

// parseFenceBytes is parseFenceRecord with the boot left in b (rec.boot
// empty), so that the counter is read without an allocation.
func parseFenceBytes(b []byte) (rec fenceRecord, boot []byte, err error) {
	if len(b) == fenceRecordLen && string(b[:3]) == "v2 " && b[23] == ' ' && b[44] == ' ' && b[fenceRecordLen-1] == '\n' {
		last, err1 := strconv.ParseInt(string(b[3:23]), 10, 64)
		reserved, err2 := strconv.ParseInt(string(b[24:44]), 10, 64)
		boot := bytes.TrimRight(b[45:fenceRecordLen-1], " ")
		if err1 == nil && err2 == nil && last >= 0 && reserved >= last && bytes.IndexByte(boot, ' ') < 0 {
			return fenceRecord{last: last, reserved: reserved}, boot, nil
		}
		return fenceRecord{}, nil, fmt.Errorf("bad record %q", b)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return fenceRecord{}, nil, nil
	}
	n, err := strconv.ParseInt(s, 10, 64) // earlier versions: the counter alone
	if err != nil || n < 0 {
		return fenceRecord{}, nil, fmt.Errorf("bad record %q", s)
	}
	return fenceRecord{last: n, reserved: n}, nil, nil
}

// bootID identifies the running boot of the machine ("" when unknown):
// while it is unchanged, every write to a file, synced or not, is seen by
// every process that reads the file, even after its writer was killed.
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	id := strings.TrimSpace(string(b))
	if err != nil || id == "" || len(id) > 36 || strings.ContainsAny(id, " \t\n") {
		return ""
	}
	return id
})

// bump issues the directory's next fence from its counter, for the name
// whose lock file is key, and says whether that name has an earlier
// version's .fence file to remove. The counter stays open for the next
// acquire; goroutines take turns on it with counterMu, processes with a
// lock on it (lockCounter), held only for the read and write; waiting for
// another process's turn ends with ctx.
func (s *LocalStore) bump(ctx context.Context, key string) (fence int64, legacy bool, err error) {
	s.counterMu.Lock()
	defer s.counterMu.Unlock()
	path := s.counterPath
	opened := s.counter == nil
	if opened {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return 0, false, fmt.Errorf("lease: local store: opening the fence counter: %w", err)
		}
		s.counter = f
	}
	guard, err := lockCounter(ctx, s.counter, path)
	if err != nil {
		if ctx.Err() == nil {
			s.closeCounter()
		}
		return 0, false, fmt.Errorf("lease: local store: locking %s: %w", path, err)
	}
	defer guard.unlock()
	if opened {
		// Once per open of the counter: an empty counter, new or reset,
		// only becomes non-empty (every write is a whole record).
		if err := s.takeOver(path); err != nil {
			s.closeCounter()
			return 0, false, err
		}
	}
	fence, err = bumpFence(s.counter, path, s.buf[:])
	if err != nil {
		s.closeCounter()
		return 0, false, err
	}
	if s.legacy[key] {
		delete(s.legacy, key)
		legacy = true
	}
	return fence, legacy, nil
}

// takeOver lists the directory for an earlier version's per-name .fence
// files (s.legacy, to be removed at their names' next acquires) and, when
// the counter is empty, starts it above every fence they issued (their
// reserved ends, which were synced): written as a record of no known
// boot, so that the first bump reserves and syncs a block above it.
// Called under the counter's lock, when the store opens the counter.
func (s *LocalStore) takeOver(path string) error {
	st, err := s.counter.Stat()
	if err != nil {
		return err
	}
	dirents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("lease: local store: listing %s: %w", s.dir, err)
	}
	s.legacy = nil
	var floor int64
	for _, de := range dirents {
		n := de.Name()
		base, ok := strings.CutSuffix(n, ".fence")
		if !ok || !strings.HasPrefix(n, localFilePrefix) {
			continue
		}
		if s.legacy == nil {
			s.legacy = map[string]bool{}
		}
		s.legacy[filepath.Join(s.dir, base+".lock")] = true
		if st.Size() > 0 {
			continue // taken over already: only listed
		}
		b, err := os.ReadFile(filepath.Join(s.dir, n))
		if errors.Is(err, os.ErrNotExist) {
			continue // removed by its name's acquirer meanwhile
		}
		if err != nil {
			return fmt.Errorf("lease: local store: reading %s: %w", n, err)
		}
		rec, err := parseFenceRecord(b)
		if err != nil {
			return fmt.Errorf("lease: local store: %s is corrupt (%v); move it away to reset its counter", filepath.Join(s.dir, n), err)
		}
		floor = max(floor, rec.reserved)
	}
	if floor == 0 {
		return nil
	}
	if _, err := s.counter.WriteAt(fenceRecord{last: floor, reserved: floor}.encode(), 0); err != nil {
		return fmt.Errorf("lease: local store: writing %s: %w", path, err)
	}
	return nil
}

func (s *LocalStore) closeCounter() {
	if s.counter != nil {
		_ = s.counter.Close()
		s.counter = nil
	}
}

// Close closes the fence counter the store keeps open, and removes the
// released lock files it kept for reuse. Leases held through it stay
// held; the store stays usable and opens the counter again as needed.
func (s *LocalStore) Close() error {
	if err := s.check(); err != nil {
		return err
	}
	s.mu.Lock()
	for _, h := range s.idle {
		h.lock.discard()
	}
	s.idle = nil
	s.mu.Unlock()
	s.counterMu.Lock()
	defer s.counterMu.Unlock()
	var err error
	if s.counter != nil {
		err = s.counter.Close()
		s.counter = nil
	}
	return err
}

// bumpFence issues the next fence from f, the counter at path, and
// returns it. The caller
// holds the name's file lock, which makes it the only writer. Within the
// boot that wrote the record, the next fence follows the last one issued;
// otherwise (a reboot may have lost an unsynced write) it follows the end
// of the reserved block, which was synced. Passing the end of the block
// reserves the next one, and that write is synced before the fence is
// handed out.
func bumpFence(f *os.File, path string, buf []byte) (int64, error) {
	// A record fills buf (fenceRecordLen): one read. (Shorter: a new
	// file, or the counter of an earlier version.)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("lease: local store: reading %s: %w", path, err)
	}
	rec, recBoot, err := parseFenceBytes(buf[:n])
	if err != nil {
		return 0, fmt.Errorf("lease: local store: %s is corrupt (%v); move it away to reset the counter", path, err)
	}
	boot := bootID()
	next := rec.reserved + 1
	if boot != "" && string(recBoot) == boot {
		next = rec.last + 1
	}
	sync := next > rec.reserved
	rec.last, rec.boot = next, boot
	if sync {
		rec.reserved = next
		if boot != "" {
			rec.reserved = next + fenceBlock - 1
		}
	}
	if _, err := f.WriteAt(rec.appendTo(buf[:0]), 0); err != nil {
		return 0, fmt.Errorf("lease: local store: writing %s: %w", path, err)
	}
	if sync {
		// Synced so that no fence of the block is ever issued again, even
		// after a machine crash.
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("lease: local store: syncing %s: %w", path, err)
		}
	}
	return next, nil
}

// Release unlocks name's file if owner holds it.
func (s *LocalStore) Release(ctx context.Context, name, owner string) (bool, error) {
	if err := s.checkArgs(ctx, name, owner); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[name]
	if !ok || h.pending || h.owner != owner {
		return false, nil
	}
	var keep bool
	var err error
	if h.reused || s.releasedBefore(name) {
		keep, err = h.lock.release() // kept open for the next acquire
	} else {
		err = h.lock.unlock(true) // removed, unlinked while still locked
	}
	// Wakes the process's next waiter, whose own attempt on the file lock
	// decides, even if the unlock reported an error.
	released(h.lock.path)
	if err != nil {
		return false, fmt.Errorf("lease: local store: unlocking %s: %w", h.lock.path, err)
	}
	delete(s.held, name)
	if keep {
		s.keepIdle(h)
	}
	return true, nil
}

// HonoursContext reports true (lease.ContextHonourer): every call returns
// by its context's end, so Manager calls the store on the caller's
// goroutine instead of a goroutine per call. Lock files are taken without
// waiting (a held one is a refusal), the directory counter's lock is
// polled until the context ends (lockCounter), and the rest are local file
// operations. One step no deadline reaches: the sync that reserves the
// next block of fences, once per fenceBlock acquires in the directory,
// lasts as long as the disk takes (on a network file system that is not
// answering, as long as that). No call uses its context after it returns.
func (s *LocalStore) HonoursContext() bool { return true }

var _ ContextHonourer = (*LocalStore)(nil)

// Refresh reports whether owner holds name; ttl is ignored, since a local
// lease lasts until it is released or its process ends.
func (s *LocalStore) Refresh(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if err := s.checkArgs(ctx, name, owner); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[name]
	return ok && !h.pending && h.owner == owner, nil
}

func (s *LocalStore) checkArgs(ctx context.Context, name, owner string) error {
	if err := s.check(); err != nil {
		return err
	}
	// An ended ctx is reported before a bad name or owner, as it always
	// was here; ttl is ignored, so it is not checked.
	if ctx != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if err := CheckCall(ctx, name, owner, 0); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	return nil
}

var _ Store = (*LocalStore)(nil)
