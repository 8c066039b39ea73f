//go:build !unix

package lease

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/gofrs/flock"
)

// fileLock is an exclusive lock on one lock file, through gofrs/flock
// (LockFileEx on Windows).
type fileLock struct {
	fl   *flock.Flock
	f    *os.File // nil: the fence is not written into the file here
	path string
}

// tryLockFile locks the file at path, created if missing, without waiting;
// ok is false when another holder has it. Lock files are never removed
// here (Windows cannot remove an open file), so the file locked is always
// the path's.
func tryLockFile(path string) (*fileLock, bool, error) {
	fl := flock.New(path)
	ok, err := fl.TryLock()
	if err != nil || !ok {
		return nil, false, err
	}
	// No fence is written into it: LockFileEx's lock would refuse a
	// write through another handle.
	return &fileLock{fl: fl, path: path}, true, nil
}

// unlock lets the lock go; the file stays (remove is ignored).
func (l *fileLock) unlock(bool) error {
	return l.fl.Unlock()
}

// release lets the lock go. The file is not kept open for the name's next
// acquire here (keep is false): LockFileEx's lock is on a handle that
// gofrs/flock closes.
func (l *fileLock) release() (keep bool, err error) {
	return false, l.unlock(true)
}

// relock is never called here: release keeps no file.
func (l *fileLock) relock() (bool, error) {
	return false, errors.New("lease: local store: no kept lock file on this platform")
}

// discard is never called here: release keeps no file.
func (l *fileLock) discard() { _ = l.fl.Close() }

// lockCounter takes the directory counter's lock, a separate file beside
// it (a byte-range lock on the counter itself would stop this process's
// own writes to it), waiting for another process until ctx ends; the
// returned func lets it go.
func lockCounter(ctx context.Context, _ *os.File, path string) (counterGuard, error) {
	fl := flock.New(path + ".guard")
	ok, err := fl.TryLockContext(ctx, time.Millisecond)
	if err != nil {
		return counterGuard{}, err
	}
	if !ok {
		return counterGuard{}, ctx.Err()
	}
	return counterGuard{fl}, nil
}

// counterGuard is a held lock on the directory's counter.
type counterGuard struct{ fl *flock.Flock }

func (g counterGuard) unlock() { _ = g.fl.Unlock() }
