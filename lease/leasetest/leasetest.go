// Package leasetest is the conformance suite for lease.Store
// implementations. lockplugin's own stores pass it, and a third-party store
// can run it from an ordinary test:
//
//	// fragment: needs t *testing.T, newMyStore func() lease.Store
//	t.Run("conformance", func(t *testing.T) {
//		leasetest.Run(t, func(t *testing.T) lease.Store { return newMyStore() })
//	})
//
// It checks: free acquire; held acquire refused (through the same and
// another store instance); release and refresh by a stranger refused;
// fences strictly increasing; 20 races of 8 goroutines with exactly one
// winner each; a 300-byte name, unicode names and neighbours that naive
// collations confuse (case, accents, trailing space, a shared 200-byte
// prefix) stay apart; a cancelled context fails; an expired lease is taken
// over with a greater fence and the old holder's refresh and release are
// refused; refresh extends and shortens; TTL 0 never expires; the holder's
// repeated acquire gets the same fence and a new expiry; releasing a name
// never held answers not-held; and, with Restart, every fence after a
// restart is above every fence before.
//
// A store that implements the optional interfaces lease.GrantStore or
// lease.Waiter gets their checks too ("Grant", "WaitFree": a granted TTL
// never below the asked one, the handle's refresh and release, and that
// WaitFree waits while held and wakes on a release and on an expiry).
//
// The suite needs only the standard library. Each check calls newStore
// twice and uses the two stores as two nodes of one application would, so
// newStore must return stores over the same backend (the same directory,
// table or Redis). Lock names are random per run and start with a prefix
// (Prefix), so runs never meet each other's leases.
package leasetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// Option configures Run. A nil Option is ignored; an invalid value fails
// the test before any check runs.
type Option func(*config)

type config struct {
	prefix     string
	ignoresTTL bool
	ttl        time.Duration
	races      int
	racers     int
	// expiryLimit is how long past the TTL an expiry may take to show.
	expiryLimit time.Duration
	restart     func(t *testing.T)
	// instanceHolds: a lease is held by the Store value that took it.
	instanceHolds bool
}

// InstanceHolds declares a store whose leases are held by the Store value
// that took them, not by a shared backend: the local store's flock belongs
// to the file descriptor its LocalStore opened. A holder's repeated Acquire
// (a retry after a lost reply) then goes through the same value, and the
// IdempotentAcquire check sends it through that value only.
func InstanceHolds() Option { return func(c *config) { c.instanceHolds = true } }

// Prefix starts every lock name the suite uses (default "leasetest"), so
// that suites sharing one backend never meet.
func Prefix(p string) Option { return func(c *config) { c.prefix = p } }

// IgnoresTTL declares a store whose leases never expire, like
// lease.LocalStore: the expiry checks then check that a lease outlives its
// TTL instead.
func IgnoresTTL() Option { return func(c *config) { c.ignoresTTL = true } }

// ShortTTL sets the TTL of the expiry checks (default 250 ms). Raise it
// for a store whose expiry is coarser.
func ShortTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// Races sets how many times the concurrent-acquire check races how many
// goroutines (default 20 races of 8).
func Races(races, goroutines int) Option {
	return func(c *config) { c.races, c.racers = races, goroutines }
}

// Restart gives the suite a way to restart the store's backend (kill and
// start again the server, reopen the directory...): the FencesAcrossRestart
// check then takes leases, calls restart, and checks that every fence
// issued after it is greater than every fence issued before, and that the
// names can be taken again. nil, the default, skips the check. newStore is
// called again after restart.
func Restart(restart func(t *testing.T)) Option { return func(c *config) { c.restart = restart } }

// Run runs every check of the suite as a subtest of t. newStore is called
// twice per check (see the package documentation).
func Run(t *testing.T, newStore func(t *testing.T) lease.Store, opts ...Option) {
	t.Helper()
	cfg := config{prefix: "leasetest", ttl: 250 * time.Millisecond, races: 20, racers: 8, expiryLimit: 5 * time.Second}
	for _, o := range opts {
		if o != nil { // a nil Option is ignored, as everywhere in lockplugin
			o(&cfg)
		}
	}
	if cfg.ttl <= 0 || cfg.races <= 0 || cfg.racers <= 0 {
		t.Fatalf("leasetest: ShortTTL must be positive (got %v) and Races' counts too (got %d races of %d goroutines)", cfg.ttl, cfg.races, cfg.racers)
	}
	// One store, only to learn which optional interfaces it implements.
	probe := newStore(t)
	for _, c := range checks(cfg, probe) {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			e := &env{A: newStore(t), B: newStore(t), cfg: cfg, test: c.name, t: t, newStore: newStore}
			if err := c.run(ctx, e); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// env is what a check runs against: two stores over one backend.
type env struct {
	A, B     lease.Store
	cfg      config
	test     string
	t        *testing.T
	newStore func(t *testing.T) lease.Store
}

type check struct {
	name string
	run  func(ctx context.Context, e *env) error
}

func checks(cfg config, a lease.Store) []check {
	cs := []check{
		{"FreeAcquire", checkFreeAcquire},
		{"HeldRefused", checkHeldRefused},
		{"StrangerRefused", checkStrangerRefused},
		{"FenceIncreases", checkFenceIncreases},
		{"ConcurrentAcquire", checkConcurrentAcquire},
		{"NamesStayApart", checkNamesStayApart},
		{"CancelledContext", checkCancelledContext},
		{"IdempotentAcquire", checkIdempotentAcquire},
		{"ReleaseNotHeld", checkReleaseNotHeld},
	}
	if cfg.ignoresTTL {
		cs = append(cs, check{"TTLIgnored", checkTTLIgnored})
	} else {
		cs = append(cs,
			check{"ExpiredTakenOver", checkExpiredTakenOver},
			check{"RefreshExtends", checkRefreshExtends},
			check{"ZeroTTLNeverExpires", checkZeroTTLNeverExpires},
			check{"IdempotentAcquireResetsExpiry", checkIdempotentAcquireResetsExpiry},
		)
	}
	if _, ok := a.(lease.GrantStore); ok {
		cs = append(cs, check{"Grant", checkGrant})
	}
	if _, ok := a.(lease.Waiter); ok {
		cs = append(cs, check{"WaitFree", checkWaitFree})
	}
	if cfg.restart != nil {
		// Last: it restarts the backend under every store.
		cs = append(cs, check{"FencesAcrossRestart", checkFencesAcrossRestart})
	}
	return cs
}

// longTTL is the TTL of leases that must not expire during a check.
const longTTL = 30 * time.Second

// Name returns a lock name unique to this run and check.
func (e *env) Name(suffix string) string {
	return fmt.Sprintf("%s-%s-%s-%s", e.cfg.prefix, e.test, token(4), suffix)
}

// token returns n random bytes in hex.
func token(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// owner returns a fresh owner token, as lease.Manager makes them.
func owner() string { return token(16) }

func mustAcquire(ctx context.Context, s lease.Store, name, who string, ttl time.Duration) (int64, error) {
	fence, ok, err := s.Acquire(ctx, name, who, ttl)
	if err != nil {
		return 0, fmt.Errorf("Acquire(%q) of a free lease: %w", name, err)
	}
	if !ok {
		return 0, fmt.Errorf("Acquire(%q) of a free lease was refused", name)
	}
	if fence <= 0 {
		return 0, fmt.Errorf("Acquire(%q) returned fence %d, want > 0", name, fence)
	}
	return fence, nil
}

func mustBeHeld(ctx context.Context, s lease.Store, name, why string) error {
	_, ok, err := s.Acquire(ctx, name, owner(), longTTL)
	if err != nil {
		return fmt.Errorf("Acquire(%q) of a held lease (%s): %w", name, why, err)
	}
	if ok {
		return fmt.Errorf("Acquire(%q) of a held lease (%s) succeeded: two holders", name, why)
	}
	return nil
}

func expect(what string, got bool, err error, want bool) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if got != want {
		return fmt.Errorf("%s = %v, want %v", what, got, want)
	}
	return nil
}

func checkFreeAcquire(ctx context.Context, e *env) error {
	name, o := e.Name("free"), owner()
	if _, err := mustAcquire(ctx, e.A, name, o, longTTL); err != nil {
		return err
	}
	ok, err := e.A.Refresh(ctx, name, o, longTTL)
	if err := expect("holder's Refresh", ok, err, true); err != nil {
		return err
	}
	ok, err = e.A.Release(ctx, name, o)
	if err := expect("holder's Release", ok, err, true); err != nil {
		return err
	}
	ok, err = e.A.Release(ctx, name, o)
	if err := expect("second Release", ok, err, false); err != nil {
		return err
	}
	ok, err = e.A.Refresh(ctx, name, o, longTTL)
	return expect("Refresh after Release", ok, err, false)
}

func checkHeldRefused(ctx context.Context, e *env) error {
	name, o := e.Name("held"), owner()
	if _, err := mustAcquire(ctx, e.A, name, o, longTTL); err != nil {
		return err
	}
	if err := mustBeHeld(ctx, e.B, name, "through the other store"); err != nil {
		return err
	}
	if err := mustBeHeld(ctx, e.A, name, "through the same store"); err != nil {
		return err
	}
	ok, err := e.A.Release(ctx, name, o)
	if err := expect("holder's Release", ok, err, true); err != nil {
		return err
	}
	o2 := owner()
	if _, err := mustAcquire(ctx, e.B, name, o2, longTTL); err != nil {
		return fmt.Errorf("after release: %w", err)
	}
	_, err = e.B.Release(ctx, name, o2)
	return err
}

func checkStrangerRefused(ctx context.Context, e *env) error {
	name, o, stranger := e.Name("stranger"), owner(), owner()
	if _, err := mustAcquire(ctx, e.A, name, o, longTTL); err != nil {
		return err
	}
	for _, s := range []lease.Store{e.A, e.B} {
		ok, err := s.Release(ctx, name, stranger)
		if err := expect("a stranger's Release", ok, err, false); err != nil {
			return err
		}
		ok, err = s.Refresh(ctx, name, stranger, longTTL)
		if err := expect("a stranger's Refresh", ok, err, false); err != nil {
			return err
		}
	}
	if err := mustBeHeld(ctx, e.B, name, "after a stranger's Release"); err != nil {
		return err
	}
	ok, err := e.A.Release(ctx, name, o)
	return expect("holder's Release after a stranger's", ok, err, true)
}

func checkFenceIncreases(ctx context.Context, e *env) error {
	name := e.Name("fence")
	var last int64
	for i := range 6 {
		s := e.A
		if i%2 == 1 {
			s = e.B
		}
		o := owner()
		fence, err := mustAcquire(ctx, s, name, o, longTTL)
		if err != nil {
			return err
		}
		if fence <= last {
			return fmt.Errorf("acquire %d returned fence %d after %d: fences must strictly increase", i+1, fence, last)
		}
		last = fence
		ok, err := s.Release(ctx, name, o)
		if err := expect("Release", ok, err, true); err != nil {
			return err
		}
	}
	return nil
}

// checkConcurrentAcquire races goroutines, half on each store, to acquire
// one free name: exactly one may win each race.
func checkConcurrentAcquire(ctx context.Context, e *env) error {
	name := e.Name("race")
	var last int64
	for round := range e.cfg.races {
		n := e.cfg.racers
		type result struct {
			store lease.Store
			owner string
			fence int64
			ok    bool
			err   error
		}
		res := make([]result, n)
		race(n, func(i int) {
			s := e.A
			if i%2 == 1 {
				s = e.B
			}
			o := owner()
			fence, ok, err := s.Acquire(ctx, name, o, longTTL)
			res[i] = result{s, o, fence, ok, err}
		})
		winner := -1
		for i, r := range res {
			if r.err != nil {
				return fmt.Errorf("race %d: Acquire: %w", round, r.err)
			}
			if !r.ok {
				continue
			}
			if winner >= 0 {
				return fmt.Errorf("race %d: goroutines %d and %d both acquired %q (fences %d and %d)",
					round, winner, i, name, res[winner].fence, r.fence)
			}
			winner = i
		}
		if winner < 0 {
			return fmt.Errorf("race %d: nobody acquired the free lease %q", round, name)
		}
		w := res[winner]
		if w.fence <= last {
			return fmt.Errorf("race %d: fence %d after %d: fences must strictly increase", round, w.fence, last)
		}
		last = w.fence
		ok, err := w.store.Release(ctx, name, w.owner)
		if err := expect("winner's Release", ok, err, true); err != nil {
			return fmt.Errorf("race %d: %w", round, err)
		}
	}
	return nil
}

// race runs fn on n goroutines released together and waits for them.
func race(n int, fn func(i int)) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			fn(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// checkNamesStayApart uses a 300-byte name, a unicode name, and neighbours
// that naive stores confuse: names sharing their first 200+ bytes (cut
// off), differing in case (case-insensitive collations) or in a trailing
// space (PAD SPACE collations). Each must be a lease of its own.
func checkNamesStayApart(ctx context.Context, e *env) error {
	base := e.Name("n")
	long := base + "-" + strings.Repeat("x", 300-len(base)-1)
	pairs := [][2]string{
		{long, long[:len(long)-1] + "y"},
		{base + "-заказ-42-注文-🔒", base + "-заказ-42-注文-🔓"},
		{base + "-Case", base + "-case"},
		{base + "-pad", base + "-pad "},
		{base + "-accent-e", base + "-accent-é"},
	}
	for _, p := range pairs {
		oa, ob := owner(), owner()
		if _, err := mustAcquire(ctx, e.A, p[0], oa, longTTL); err != nil {
			return err
		}
		if err := mustBeHeld(ctx, e.B, p[0], "same name"); err != nil {
			return err
		}
		if _, err := mustAcquire(ctx, e.B, p[1], ob, longTTL); err != nil {
			return fmt.Errorf("%w: it was taken for %q, a different name", err, p[0])
		}
		if err := mustBeHeld(ctx, e.A, p[1], "same name"); err != nil {
			return err
		}
		ok, err := e.A.Release(ctx, p[0], oa)
		if err := expect(fmt.Sprintf("Release(%q)", p[0]), ok, err, true); err != nil {
			return err
		}
		if err := mustBeHeld(ctx, e.A, p[1], "its neighbour was released"); err != nil {
			return err
		}
		ok, err = e.B.Release(ctx, p[1], ob)
		if err := expect(fmt.Sprintf("Release(%q)", p[1]), ok, err, true); err != nil {
			return err
		}
	}
	return nil
}

func checkCancelledContext(ctx context.Context, e *env) error {
	name := e.Name("cancelled")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, ok, err := e.A.Acquire(cctx, name, owner(), longTTL)
	if err == nil {
		return fmt.Errorf("an Acquire with a cancelled context returned ok=%v and no error", ok)
	}
	o := owner()
	if _, err := mustAcquire(ctx, e.B, name, o, longTTL); err != nil {
		return fmt.Errorf("after an Acquire with a cancelled context: %w", err)
	}
	_, err = e.B.Release(ctx, name, o)
	return err
}

// pollUntilFree retries Acquire every 20 ms until it succeeds or limit
// passes: expiry is the one thing nothing can signal, so the check polls
// the store rather than sleeping blind.
func pollUntilFree(ctx context.Context, s lease.Store, name, who string, ttl, limit time.Duration) (int64, time.Duration, error) {
	start := time.Now()
	for {
		fence, ok, err := s.Acquire(ctx, name, who, ttl)
		if err != nil {
			return 0, 0, fmt.Errorf("Acquire(%q) while waiting for expiry: %w", name, err)
		}
		if ok {
			return fence, time.Since(start), nil
		}
		if time.Since(start) > limit {
			return 0, 0, fmt.Errorf("lease %q did not expire within %v", name, limit)
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stayHeld checks, every 25 ms for d, that nobody else can acquire names.
func stayHeld(ctx context.Context, s lease.Store, why string, d time.Duration, names ...string) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, name := range names {
			if err := mustBeHeld(ctx, s, name, why); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
	return nil
}

func checkExpiredTakenOver(ctx context.Context, e *env) error {
	name, first, second := e.Name("expiry"), owner(), owner()
	ttl := e.cfg.ttl
	start := time.Now()
	f1, err := mustAcquire(ctx, e.A, name, first, ttl)
	if err != nil {
		return err
	}
	f2, _, err := pollUntilFree(ctx, e.B, name, second, longTTL, ttl+e.cfg.expiryLimit)
	if err != nil {
		return err
	}
	if took := time.Since(start); took < ttl/2 {
		return fmt.Errorf("a lease with TTL %v was taken over after %v", ttl, took)
	}
	if f2 <= f1 {
		return fmt.Errorf("takeover fence %d is not greater than the expired holder's %d", f2, f1)
	}
	ok, err := e.A.Refresh(ctx, name, first, longTTL)
	if err := expect("expired holder's Refresh after a takeover", ok, err, false); err != nil {
		return err
	}
	ok, err = e.A.Release(ctx, name, first)
	if err := expect("expired holder's Release after a takeover", ok, err, false); err != nil {
		return err
	}
	if err := mustBeHeld(ctx, e.A, name, "the expired holder's Release must not free it"); err != nil {
		return err
	}
	ok, err = e.B.Release(ctx, name, second)
	return expect("new holder's Release", ok, err, true)
}

func checkRefreshExtends(ctx context.Context, e *env) error {
	name, o := e.Name("refresh"), owner()
	ttl := e.cfg.ttl
	f1, err := mustAcquire(ctx, e.A, name, o, ttl)
	if err != nil {
		return err
	}
	ok, err := e.A.Refresh(ctx, name, o, 20*ttl)
	if err := expect("Refresh", ok, err, true); err != nil {
		return err
	}
	if err := stayHeld(ctx, e.B, "refreshed past its first TTL", 2*ttl, name); err != nil {
		return err
	}
	// Refresh sets the expiry from now, shortening it too.
	ok, err = e.A.Refresh(ctx, name, o, ttl)
	if err := expect("Refresh to a short TTL", ok, err, true); err != nil {
		return err
	}
	o2 := owner()
	f2, _, err := pollUntilFree(ctx, e.B, name, o2, longTTL, ttl+e.cfg.expiryLimit)
	if err != nil {
		return fmt.Errorf("after shortening the TTL by Refresh: %w", err)
	}
	if f2 <= f1 {
		return fmt.Errorf("takeover fence %d is not greater than %d", f2, f1)
	}
	ok, err = e.B.Release(ctx, name, o2)
	return expect("Release", ok, err, true)
}

func checkZeroTTLNeverExpires(ctx context.Context, e *env) error {
	ttl := e.cfg.ttl
	forever, refreshed := e.Name("forever"), e.Name("refreshed-forever")
	o1, o2 := owner(), owner()
	if _, err := mustAcquire(ctx, e.A, forever, o1, 0); err != nil {
		return err
	}
	if _, err := mustAcquire(ctx, e.A, refreshed, o2, ttl); err != nil {
		return err
	}
	ok, err := e.A.Refresh(ctx, refreshed, o2, 0)
	if err := expect("Refresh to TTL 0", ok, err, true); err != nil {
		return err
	}
	ok, err = e.A.Refresh(ctx, forever, o1, 0)
	if err := expect("Refresh of a TTL-0 lease to TTL 0", ok, err, true); err != nil {
		return err
	}
	if err := stayHeld(ctx, e.B, "TTL 0", 2*ttl+100*time.Millisecond, forever, refreshed); err != nil {
		return err
	}
	ok, err = e.A.Release(ctx, forever, o1)
	if err := expect("Release", ok, err, true); err != nil {
		return err
	}
	ok, err = e.A.Release(ctx, refreshed, o2)
	return expect("Release", ok, err, true)
}

func checkTTLIgnored(ctx context.Context, e *env) error {
	name, o := e.Name("ttl-ignored"), owner()
	ttl := e.cfg.ttl
	if _, err := mustAcquire(ctx, e.A, name, o, ttl); err != nil {
		return err
	}
	if err := stayHeld(ctx, e.B, "a store that ignores TTLs", 2*ttl, name); err != nil {
		return err
	}
	ok, err := e.A.Refresh(ctx, name, o, ttl)
	if err := expect("holder's Refresh", ok, err, true); err != nil {
		return err
	}
	ok, err = e.A.Release(ctx, name, o)
	return expect("holder's Release", ok, err, true)
}

// checkIdempotentAcquire: an Acquire repeated by the holder (a client
// retry whose first reply was lost) gets the lease and the same fence
// back, through either store; a stranger is still refused.
func checkIdempotentAcquire(ctx context.Context, e *env) error {
	name, o := e.Name("idempotent"), owner()
	f1, err := mustAcquire(ctx, e.A, name, o, longTTL)
	if err != nil {
		return err
	}
	retriers := []lease.Store{e.A, e.B}
	if e.cfg.instanceHolds {
		retriers = []lease.Store{e.A, e.A}
	}
	for i, s := range retriers {
		f, ok, err := s.Acquire(ctx, name, o, longTTL)
		if err != nil {
			return fmt.Errorf("the holder's repeated Acquire %d: %w", i+1, err)
		}
		if !ok {
			return fmt.Errorf("the holder's repeated Acquire %d was refused: not idempotent per owner, a lost reply leaves the lease held by nobody", i+1)
		}
		if f != f1 {
			return fmt.Errorf("the holder's repeated Acquire %d returned fence %d, want the same fence %d", i+1, f, f1)
		}
	}
	if err := mustBeHeld(ctx, e.B, name, "after the holder's repeated Acquire"); err != nil {
		return err
	}
	ok, err := e.A.Release(ctx, name, o)
	if err := expect("holder's Release after repeated Acquires", ok, err, true); err != nil {
		return err
	}
	o2 := owner()
	f2, err := mustAcquire(ctx, e.B, name, o2, longTTL)
	if err != nil {
		return fmt.Errorf("after release: %w", err)
	}
	if f2 <= f1 {
		return fmt.Errorf("fence %d after the idempotent holder's %d: fences must strictly increase", f2, f1)
	}
	ok, err = e.B.Release(ctx, name, o2)
	return expect("Release", ok, err, true)
}

// checkIdempotentAcquireResetsExpiry: the holder's repeated Acquire sets
// the expiry to its ttl from now, as a refresh would.
func checkIdempotentAcquireResetsExpiry(ctx context.Context, e *env) error {
	name, o := e.Name("idempotent-ttl"), owner()
	ttl := e.cfg.ttl
	if _, err := mustAcquire(ctx, e.A, name, o, ttl); err != nil {
		return err
	}
	if _, ok, err := e.A.Acquire(ctx, name, o, 20*ttl); err != nil || !ok {
		return fmt.Errorf("the holder's repeated Acquire: ok=%v err=%v", ok, err)
	}
	if err := stayHeld(ctx, e.B, "the holder's repeated Acquire set a longer TTL", 2*ttl, name); err != nil {
		return err
	}
	ok, err := e.A.Release(ctx, name, o)
	return expect("Release", ok, err, true)
}

// checkReleaseNotHeld: releasing or refreshing a name that was never held
// answers ok=false and no error, as does releasing twice.
func checkReleaseNotHeld(ctx context.Context, e *env) error {
	name, o := e.Name("never-held"), owner()
	ok, err := e.A.Release(ctx, name, o)
	if err := expect("Release of a never-held name", ok, err, false); err != nil {
		return err
	}
	ok, err = e.B.Refresh(ctx, name, o, longTTL)
	if err := expect("Refresh of a never-held name", ok, err, false); err != nil {
		return err
	}
	if _, err := mustAcquire(ctx, e.A, name, o, longTTL); err != nil {
		return fmt.Errorf("after a Release of a never-held name: %w", err)
	}
	ok, err = e.A.Release(ctx, name, o)
	if err := expect("Release", ok, err, true); err != nil {
		return err
	}
	ok, err = e.B.Release(ctx, name, o)
	return expect("a repeated Release (its first reply lost)", ok, err, false)
}

// checkFencesAcrossRestart takes and releases three names a few times,
// keeps the last one held with a short TTL, restarts the backend, and
// takes them again through a new store: every fence after the restart
// must be greater than every fence before it, for each name.
func checkFencesAcrossRestart(ctx context.Context, e *env) error {
	names := []string{e.Name("restart-a"), e.Name("restart-b"), e.Name("restart-held")}
	most := map[string]int64{}
	for i, name := range names {
		for range 3 {
			o := owner()
			f, err := mustAcquire(ctx, e.A, name, o, e.cfg.ttl)
			if err != nil {
				return err
			}
			most[name] = max(most[name], f)
			if i == len(names)-1 {
				break // held across the restart
			}
			ok, err := e.A.Release(ctx, name, o)
			if err := expect("Release", ok, err, true); err != nil {
				return err
			}
		}
	}
	e.cfg.restart(e.t)
	s := e.newStore(e.t)
	for _, name := range names {
		if e.cfg.ignoresTTL && name == names[len(names)-1] {
			continue // a lease that never expires may have survived
		}
		o := owner()
		f, _, err := pollUntilFree(ctx, s, name, o, longTTL, e.cfg.ttl+e.cfg.expiryLimit)
		if err != nil {
			return fmt.Errorf("after the restart: %w", err)
		}
		if f <= most[name] {
			return fmt.Errorf("after the restart %q got fence %d, not above %d issued before it: fences must strictly increase across restarts", name, f, most[name])
		}
		ok, err := s.Release(ctx, name, o)
		if err := expect("Release after the restart", ok, err, true); err != nil {
			return err
		}
	}
	return nil
}
