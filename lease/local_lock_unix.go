//go:build unix

package lease

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// fileLock is an exclusive flock(2) lock on one open lock file.
type fileLock struct {
	f    *os.File
	path string
}

// lockRetries bounds how often tryLockFile starts again because the file it
// locked had been removed (or replaced) by its releaser in between: each
// retry means another acquirer won the name meanwhile.
const lockRetries = 100

// tryLockFile locks the file at path, created if missing, without waiting;
// ok is false when another holder has it. The lock is good only if the
// file locked is still the one path names: a releaser unlinks its file
// before it unlocks it, so an acquirer that opened the file just before
// the unlink, and won the lock just after, holds a lock on a file no one
// else will ever open. It compares the locked descriptor's inode with the
// path's, and starts again on the path's new file when they differ.
func tryLockFile(path string) (*fileLock, bool, error) {
	for range lockRetries {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, false, err
		}
		if err := flockNB(f); err != nil {
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, false, nil
			}
			return nil, false, err
		}
		locked, err := f.Stat()
		if err != nil {
			_ = f.Close()
			return nil, false, err
		}
		named, err := os.Stat(path)
		if err == nil && os.SameFile(locked, named) {
			return &fileLock{f: f, path: path}, true, nil
		}
		_ = f.Close() // drops the lock on the unlinked file
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, false, err
		}
	}
	return nil, false, nil
}

// flockNB takes an exclusive flock without waiting, again after EINTR.
func flockNB(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// unlock lets the lock go, removing the file first when remove is set:
// unlinked while still locked, so that no acquirer can lock this file and
// take it for the path's (see tryLockFile). A file that cannot be removed
// stays; the lock is let go all the same.
func (l *fileLock) unlock(remove bool) error {
	if remove {
		_ = os.Remove(l.path)
	}
	return l.f.Close() // closing the only descriptor drops the flock
}

// lockCounter takes the directory counter's lock, waiting for another
// process's read and write of it; the returned func lets it go. Goroutines
// of one process take turns before this (flock is per open file).
func lockCounter(f *os.File, _ string) (func(), error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, nil
		}
		if !errors.Is(err, syscall.EINTR) {
			return nil, err
		}
	}
}
