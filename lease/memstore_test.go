package lease_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// memStore is an in-memory Store with TTLs, for Manager tests.
type memStore struct {
	mu     sync.Mutex
	leases map[string]memLease
	fences map[string]int64

	calls atomic.Int64 // store calls of any kind

	// hooks, when set, run at the start of each call; an error fails it.
	acquireHook func(name string) error
	refreshHook func(name string) (ok bool, err error, override bool)
	releaseHook func(name string) error
	// refused receives a value (without blocking) whenever Acquire finds
	// the lease held.
	refused chan string
}

type memLease struct {
	owner   string
	expires time.Time
}

func newMem() *memStore {
	return &memStore{leases: map[string]memLease{}, fences: map[string]int64{}}
}

func (s *memStore) held(name string) (memLease, bool) {
	l, ok := s.leases[name]
	if !ok || (!l.expires.IsZero() && !time.Now().Before(l.expires)) {
		return memLease{}, false
	}
	return l, true
}

func expiry(ttl time.Duration) time.Time {
	if ttl == 0 {
		return time.Time{}
	}
	return time.Now().Add(ttl)
}

func (s *memStore) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	s.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	if s.acquireHook != nil {
		if err := s.acquireHook(name); err != nil {
			return 0, false, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, held := s.held(name); held && l.owner == owner {
		// The holder again (a retry after a lost reply): same fence.
		l.expires = expiry(ttl)
		s.leases[name] = l
		return s.fences[name], true, nil
	}
	if _, held := s.held(name); held {
		if s.refused != nil {
			select {
			case s.refused <- name:
			default:
			}
		}
		return 0, false, nil
	}
	s.leases[name] = memLease{owner: owner, expires: expiry(ttl)}
	s.fences[name]++
	return s.fences[name], true, nil
}

func (s *memStore) Release(ctx context.Context, name, owner string) (bool, error) {
	s.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if s.releaseHook != nil {
		if err := s.releaseHook(name); err != nil {
			return false, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.held(name)
	if !ok || l.owner != owner {
		return false, nil
	}
	delete(s.leases, name)
	return true, nil
}

func (s *memStore) Refresh(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	s.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if s.refreshHook != nil {
		if ok, err, override := s.refreshHook(name); override {
			return ok, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.held(name)
	if !ok || l.owner != owner {
		return false, nil
	}
	l.expires = expiry(ttl)
	s.leases[name] = l
	return true, nil
}

// isHeld reports whether anyone holds name right now.
func (s *memStore) isHeld(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.held(name)
	return ok
}

var errStoreDown = errors.New("store down")
