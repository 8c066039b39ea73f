package leasetest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// memStore is an in-memory Store; its fault fields break it in the ways
// the suite must catch.
type memStore struct {
	mu     sync.Mutex
	leases map[string]memLease
	fences map[string]int64

	racy        bool // check and set in two steps
	sameFence   bool // every acquire returns fence 1
	ignoreOwner bool // anyone may release and refresh
	neverExpire bool // TTLs are ignored
	foldCase    bool // names compared case-insensitively
	truncate    int  // names cut to this many bytes
	strictOwner bool // a holder's repeated Acquire is refused
}

type memLease struct {
	owner   string
	expires time.Time // zero: never
}

func newMem() *memStore {
	return &memStore{leases: map[string]memLease{}, fences: map[string]int64{}}
}

func (s *memStore) key(name string) string {
	if s.foldCase {
		name = strings.ToLower(name)
	}
	if s.truncate > 0 && len(name) > s.truncate {
		name = name[:s.truncate]
	}
	return name
}

func (s *memStore) held(k string) (memLease, bool) {
	l, ok := s.leases[k]
	if !ok || (!l.expires.IsZero() && !time.Now().Before(l.expires)) {
		return memLease{}, false
	}
	return l, true
}

func (s *memStore) expiry(ttl time.Duration) time.Time {
	if ttl == 0 || s.neverExpire {
		return time.Time{}
	}
	return time.Now().Add(ttl)
}

func (s *memStore) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	k := s.key(name)
	s.mu.Lock()
	_, held := s.held(k)
	if s.racy {
		// Another goroutine may take it between the check and the set.
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if l, _ := s.held(k); held && l.owner == owner && !s.strictOwner {
		l.expires = s.expiry(ttl)
		s.leases[k] = l
		return s.fences[k], true, nil
	}
	if held {
		return 0, false, nil
	}
	s.leases[k] = memLease{owner: owner, expires: s.expiry(ttl)}
	s.fences[k]++
	if s.sameFence {
		return 1, true, nil
	}
	return s.fences[k], true, nil
}

func (s *memStore) Release(ctx context.Context, name, owner string) (bool, error) {
	k := s.key(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.held(k)
	if !ok || (l.owner != owner && !s.ignoreOwner) {
		return false, nil
	}
	delete(s.leases, k)
	return true, nil
}

func (s *memStore) Refresh(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	k := s.key(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.held(k)
	if !ok || (l.owner != owner && !s.ignoreOwner) {
		return false, nil
	}
	l.expires = s.expiry(ttl)
	s.leases[k] = l
	return true, nil
}

func TestRunPassesOnACorrectStore(t *testing.T) {
	s := newMem()
	// A restart keeps the fence counters, as a persistent store does, and
	// loses the leases, as one without persistence does.
	restart := func(*testing.T) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.leases = map[string]memLease{}
	}
	Run(t, func(*testing.T) lease.Store { return s }, ShortTTL(100*time.Millisecond), Restart(restart))
}

func TestRunWithIgnoresTTL(t *testing.T) {
	s := newMem()
	s.neverExpire = true
	Run(t, func(*testing.T) lease.Store { return s }, IgnoresTTL(), ShortTTL(100*time.Millisecond))
}

// TestChecksCatchBrokenStores shows that every check can fail: each broken
// store fails the check aimed at its fault.
func TestChecksCatchBrokenStores(t *testing.T) {
	byName := checksByName(config{restart: func(*testing.T) {}})
	cases := []struct {
		check string
		fault func(*memStore)
		want  string
	}{
		{"ConcurrentAcquire", func(s *memStore) { s.racy = true }, "both acquired"},
		{"FenceIncreases", func(s *memStore) { s.sameFence = true }, "strictly increase"},
		{"StrangerRefused", func(s *memStore) { s.ignoreOwner = true }, "a stranger's Release = true"},
		{"ExpiredTakenOver", func(s *memStore) { s.neverExpire = true }, "did not expire"},
		{"RefreshExtends", func(s *memStore) { s.neverExpire = true }, "did not expire"},
		{"NamesStayApart", func(s *memStore) { s.foldCase = true }, "a different name"},
		{"NamesStayApart", func(s *memStore) { s.truncate = 191 }, "a different name"},
		{"IdempotentAcquire", func(s *memStore) { s.strictOwner = true }, "not idempotent"},
		{"FencesAcrossRestart", func(*memStore) {}, "across restarts"},
	}
	for _, tc := range cases {
		t.Run(tc.check+"/"+tc.want, func(t *testing.T) {
			s := newMem()
			tc.fault(s)
			cfg := selfTestConfig()
			// A restart that loses the fence counters with the leases.
			cfg.restart = func(*testing.T) {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.leases, s.fences = map[string]memLease{}, map[string]int64{}
			}
			mustCatch(t, byName, tc.check, s, cfg, 10*time.Second, tc.want)
		})
	}
}

// checksByName indexes the suite's checks (with the optional ones, which
// checks adds for a store like optMem) by name, for the self-tests that
// run one check on a broken store.
func checksByName(cfg config) map[string]check {
	byName := map[string]check{}
	for _, c := range checks(cfg, &optMem{}) {
		byName[c.name] = c
	}
	return byName
}

// selfTestConfig is the config a self-test runs one check with: short
// TTLs and few races, so that a broken store is caught quickly.
func selfTestConfig() config {
	return config{prefix: "leasetest-self", ttl: 100 * time.Millisecond, races: 20, racers: 8, expiryLimit: 300 * time.Millisecond}
}

// mustCatch runs the check named name of byName on s (as both A and B)
// with cfg, within timeout, and fails t unless the check fails with an
// error containing want: the check can fail, and for the fault aimed at.
func mustCatch(t *testing.T, byName map[string]check, name string, s lease.Store, cfg config, timeout time.Duration, want string) {
	t.Helper()
	c, ok := byName[name]
	if !ok {
		t.Fatalf("no check %q", name)
	}
	e := &env{A: s, B: s, cfg: cfg, test: c.name, t: t, newStore: func(*testing.T) lease.Store { return s }}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := c.run(ctx, e)
	if err == nil {
		t.Fatalf("check %s passed on a store with the fault; it cannot fail", name)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("check %s failed for another reason: %v", name, err)
	}
	t.Logf("caught: %v", err)
}
