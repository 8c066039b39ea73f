//go:build unix

package lease

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// fileLock is an exclusive flock(2) lock on one open lock file, or (in a
// LocalStore's idle list) that file kept open without the lock.
type fileLock struct {
	f        *os.File
	path     string
	dev, ino uint64 // of f, which path named when f was locked
}

// lockRetries bounds how often tryLockFile starts again because the file it
// locked had been removed (or replaced) by its releaser in between: each
// retry means another acquirer won the name meanwhile.
const lockRetries = 100

// tryLockFile locks the file at path, created if missing, without waiting;
// ok is false when another holder has it. The lock is good only if the
// file locked is still the one path names: a file is removed by the
// holder of its lock, unlinked before it is unlocked, so an acquirer that
// opened the file just before the unlink, and won the lock just after,
// holds a lock on a file no one else will ever open. It compares the
// locked descriptor's inode with the path's, and starts again on the
// path's new file when they differ.
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
		var locked syscall.Stat_t
		if err := ignoringEINTR(func() error { return syscall.Fstat(int(f.Fd()), &locked) }); err != nil {
			_ = f.Close()
			return nil, false, err
		}
		l := &fileLock{f: f, path: path, dev: uint64(locked.Dev), ino: uint64(locked.Ino)}
		named, err := l.named()
		if err == nil && named {
			return l, true, nil
		}
		_ = f.Close() // drops the lock on the unlinked file
		if err != nil {
			return nil, false, err
		}
	}
	return nil, false, nil
}

// named reports whether l's path still names l's file; false, without an
// error, when the path names no file.
func (l *fileLock) named() (bool, error) {
	var st syscall.Stat_t
	err := ignoringEINTR(func() error { return syscall.Stat(l.path, &st) })
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, &fs.PathError{Op: "stat", Path: l.path, Err: err}
	}
	return uint64(st.Dev) == l.dev && uint64(st.Ino) == l.ino, nil
}

func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
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

// relock locks l, a file kept open since its release, again without
// waiting: ok is false when another holder has it (l stays open, to try
// again). As in tryLockFile, the lock is good only if the path still
// names l's file. Lock files are only ever created at their path and
// removed from it, never renamed or linked elsewhere, so l's file is
// still the path's as long as it has a link, which fstat tells without a
// look-up of the path: otherwise (another holder removed it meanwhile) l
// is closed and relock fails with errLockReplaced, and the caller opens
// the path anew.
func (l *fileLock) relock() (ok bool, err error) {
	if err := flockNB(l.f); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		_ = l.f.Close()
		return false, err
	}
	var st syscall.Stat_t
	err = ignoringEINTR(func() error { return syscall.Fstat(int(l.f.Fd()), &st) })
	if err == nil && st.Nlink > 0 {
		return true, nil
	}
	_ = l.f.Close()
	if err == nil {
		err = errLockReplaced
	}
	return false, err
}

// errLockReplaced: a kept lock file was removed by another holder.
var errLockReplaced = errors.New("lock file removed or replaced")

// release lets the lock go and keeps the file open (keep) for the name's
// next acquire; a file that cannot be unlocked is closed instead, which
// lets the lock go, and stays in the directory (it is not removed: the
// lock may already be gone, and only its holder removes a file).
func (l *fileLock) release() (keep bool, err error) {
	for {
		err = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, syscall.EINTR) {
			return false, l.unlock(false)
		}
	}
}

// discard closes a kept file, removing it first if it can be locked and
// is still the path's: a file is only ever removed under its lock (see
// tryLockFile). If another holder has it, it is left to that holder.
func (l *fileLock) discard() {
	if flockNB(l.f) == nil {
		if named, err := l.named(); err == nil && named {
			_ = os.Remove(l.path)
		}
	}
	_ = l.f.Close()
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

// counterGuard is a held lock on the directory's counter.
type counterGuard struct{ f *os.File }

// lockCounter takes the directory counter's lock, waiting for another
// process's read and write of it until ctx ends; unlock lets it go.
// Goroutines of one process take turns before this (flock is per open
// file). The wait polls a non-blocking flock (50 µs, doubling up to 2 ms)
// rather than blocking in the kernel, where no deadline reaches it: a
// process stopped while it holds the lock (SIGSTOP, a debugger) would hold
// every acquire of the directory with it.
func lockCounter(ctx context.Context, f *os.File, _ string) (counterGuard, error) {
	var timer *time.Timer
	pause := 50 * time.Microsecond
	for {
		err := flockNB(f)
		if err == nil {
			if timer != nil {
				timer.Stop()
			}
			return counterGuard{f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return counterGuard{}, err
		}
		if timer == nil {
			timer = time.NewTimer(pause)
		} else {
			timer.Reset(pause)
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return counterGuard{}, ctx.Err()
		case <-timer.C:
		}
		pause = min(2*pause, 2*time.Millisecond)
	}
}

func (g counterGuard) unlock() { _ = syscall.Flock(int(g.f.Fd()), syscall.LOCK_UN) }
