//go:build !unix

package lease

import (
	"os"

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

// lockCounter takes the directory counter's lock, a separate file beside
// it (a byte-range lock on the counter itself would stop this process's
// own writes to it), waiting for another process; the returned func lets
// it go.
func lockCounter(_ *os.File, path string) (func(), error) {
	fl := flock.New(path + ".guard")
	if err := fl.Lock(); err != nil {
		return nil, err
	}
	return func() { _ = fl.Unlock() }, nil
}
