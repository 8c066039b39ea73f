package leasetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// The checks of the optional interfaces (lease.GrantStore, lease.Waiter),
// run when the store implements them.

func grantStores(e *env) (a, b lease.GrantStore, err error) {
	a, okA := e.A.(lease.GrantStore)
	b, okB := e.B.(lease.GrantStore)
	if !okA || !okB {
		return nil, nil, errors.New("newStore returned stores of which only some implement lease.GrantStore")
	}
	return a, b, nil
}

func mustGrant(ctx context.Context, s lease.GrantStore, name, who string, ttl time.Duration) (lease.Grant, error) {
	g, ok, err := s.AcquireGrant(ctx, name, who, ttl)
	switch {
	case err != nil:
		return g, fmt.Errorf("AcquireGrant(%q) of a free lease: %w", name, err)
	case !ok:
		return g, fmt.Errorf("AcquireGrant(%q) of a free lease was refused", name)
	case g.Fence <= 0:
		return g, fmt.Errorf("AcquireGrant(%q) returned fence %d, want > 0", name, g.Fence)
	case ttl > 0 && g.TTL < ttl:
		return g, fmt.Errorf("AcquireGrant(%q) with TTL %v granted %v: a store may round a TTL up, never down", name, ttl, g.TTL)
	case ttl == 0 && g.TTL != 0:
		return g, fmt.Errorf("AcquireGrant(%q) without expiry granted TTL %v, want 0", name, g.TTL)
	}
	return g, nil
}

// checkGrant: AcquireGrant, RefreshGrant and ReleaseGrant keep the
// contract of Acquire, Refresh and Release, with the handle carried from
// one to the next, and a granted TTL never below the one asked.
func checkGrant(ctx context.Context, e *env) error {
	a, b, err := grantStores(e)
	if err != nil {
		return err
	}
	name, o := e.Name("grant"), owner()
	g, err := mustGrant(ctx, a, name, o, e.cfg.ttl)
	if err != nil {
		return err
	}
	g2, err := mustGrant(ctx, b, name, o, e.cfg.ttl)
	if err != nil {
		return fmt.Errorf("the holder's repeated acquire: %w", err)
	}
	if g2.Fence != g.Fence {
		return fmt.Errorf("the holder's repeated AcquireGrant returned fence %d, want the same %d", g2.Fence, g.Fence)
	}
	if _, ok, err := b.AcquireGrant(ctx, name, owner(), longTTL); err != nil || ok {
		return fmt.Errorf("a stranger's AcquireGrant of a held lease: ok=%v err=%v, want refused", ok, err)
	}
	for i, ttl := range []time.Duration{longTTL, longTTL, e.cfg.ttl} {
		g3, ok, err := a.RefreshGrant(ctx, name, o, g2, ttl)
		if err := expect(fmt.Sprintf("RefreshGrant %d", i+1), ok, err, true); err != nil {
			return err
		}
		if g3.Fence != g.Fence || g3.TTL < ttl {
			return fmt.Errorf("RefreshGrant %d to %v returned fence %d TTL %v, want fence %d and a TTL of at least %v", i+1, ttl, g3.Fence, g3.TTL, g.Fence, ttl)
		}
		g2 = g3
	}
	if err := mustBeHeld(ctx, e.B, name, "after RefreshGrant"); err != nil {
		return err
	}
	ok, err := a.ReleaseGrant(ctx, name, o, g2)
	if err := expect("ReleaseGrant", ok, err, true); err != nil {
		return err
	}
	ok, err = a.ReleaseGrant(ctx, name, o, g2)
	if err := expect("a repeated ReleaseGrant", ok, err, false); err != nil {
		return err
	}
	if _, ok, err := a.RefreshGrant(ctx, name, o, g2, longTTL); err != nil || ok {
		return fmt.Errorf("RefreshGrant after ReleaseGrant: ok=%v err=%v, want not held", ok, err)
	}
	// Expiry: the handle of an expired acquisition refreshes and releases
	// nothing, and the successor's fence is greater.
	o2, o3 := owner(), owner()
	g4, err := mustGrant(ctx, b, name, o2, e.cfg.ttl)
	if err != nil {
		return fmt.Errorf("after ReleaseGrant: %w", err)
	}
	if g4.Fence <= g.Fence {
		return fmt.Errorf("fence %d after %d: fences must strictly increase", g4.Fence, g.Fence)
	}
	f5, _, err := pollUntilFree(ctx, e.A, name, o3, longTTL, g4.TTL+e.cfg.expiryLimit)
	if err != nil {
		return err
	}
	if f5 <= g4.Fence {
		return fmt.Errorf("takeover fence %d is not greater than the expired holder's %d", f5, g4.Fence)
	}
	if _, ok, err := b.RefreshGrant(ctx, name, o2, g4, longTTL); err != nil || ok {
		return fmt.Errorf("RefreshGrant of an expired acquisition: ok=%v err=%v, want not held", ok, err)
	}
	ok, err = b.ReleaseGrant(ctx, name, o2, g4)
	if err := expect("ReleaseGrant of an expired acquisition", ok, err, false); err != nil {
		return err
	}
	if err := mustBeHeld(ctx, e.B, name, "the expired holder's ReleaseGrant must not free it"); err != nil {
		return err
	}
	// Without expiry.
	ok, err = e.A.Release(ctx, name, o3)
	if err := expect("Release", ok, err, true); err != nil {
		return err
	}
	g6, err := mustGrant(ctx, a, name, o, 0)
	if err != nil {
		return err
	}
	ok, err = a.ReleaseGrant(ctx, name, o, g6)
	return expect("ReleaseGrant without expiry", ok, err, true)
}

// checkWaitFree: WaitFree returns at once for a free name, waits while the
// name is held, and returns soon after a release and after an expiry. A
// store whose WaitFree answers an error matching errors.ErrUnsupported
// cannot wait in its configuration (the table store without Listen):
// nothing more is checked.
func checkWaitFree(ctx context.Context, e *env) error {
	w, ok := e.B.(lease.Waiter)
	if !ok {
		return errors.New("newStore returned stores of which only some implement lease.Waiter")
	}
	name, o := e.Name("wait"), owner()
	if err := waitWithin(ctx, w, name, 5*time.Second); err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			return nil // cannot wait in this configuration: Manager polls it
		}
		return fmt.Errorf("WaitFree of a free name: %w", err)
	}
	if _, err := mustAcquire(ctx, e.A, name, o, longTTL); err != nil {
		return err
	}
	if err := waitWithin(ctx, w, name, 300*time.Millisecond); err == nil {
		return errors.New("WaitFree returned nil at once for a held name: a Waiter that does not wait turns waiting into a busy loop")
	}
	released := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		ok, err := e.A.Release(ctx, name, o)
		released <- expect("Release", ok, err, true)
	}()
	start := time.Now()
	if err := waitWithin(ctx, w, name, 10*time.Second); err != nil {
		return fmt.Errorf("WaitFree across a release: %w", err)
	}
	if err := <-released; err != nil {
		return err
	}
	if time.Since(start) < 150*time.Millisecond {
		return fmt.Errorf("WaitFree returned after %v, before the release at 200 ms", time.Since(start))
	}
	o2 := owner()
	if _, err := mustAcquire(ctx, e.B, name, o2, e.cfg.ttl); err != nil {
		return fmt.Errorf("after WaitFree saw the release: %w", err)
	}
	if err := waitWithin(ctx, w, name, e.cfg.ttl+e.cfg.expiryLimit); err != nil {
		return fmt.Errorf("WaitFree across an expiry: %w", err)
	}
	o3 := owner()
	if _, _, err := pollUntilFree(ctx, e.A, name, o3, longTTL, e.cfg.expiryLimit); err != nil {
		return fmt.Errorf("after WaitFree saw the expiry: %w", err)
	}
	ok, err := e.A.Release(ctx, name, o3)
	return expect("Release", ok, err, true)
}

func waitWithin(ctx context.Context, w lease.Waiter, name string, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return w.WaitFree(wctx, name)
}
