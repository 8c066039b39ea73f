package leasetest

import (
	"context"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// optMem is memStore with the optional interfaces: TTLs granted rounded up
// to 50 ms, the handle unused, and WaitFree polling every 5 ms. Its fault
// fields break them in the ways the suite must catch.
type optMem struct {
	*memStore
	roundDown   bool // grants half the TTL asked for
	releaseTrue bool // ReleaseGrant always answers true
	noWait      bool // WaitFree returns at once
	neverWakes  bool // WaitFree returns only when ctx ends
}

var (
	_ lease.GrantStore = (*optMem)(nil)
	_ lease.Waiter     = (*optMem)(nil)
)

func (s *optMem) granted(ttl time.Duration) time.Duration {
	if s.roundDown {
		return ttl / 2
	}
	const step = 50 * time.Millisecond
	return (ttl + step - 1) / step * step
}

func (s *optMem) AcquireGrant(ctx context.Context, name, owner string, ttl time.Duration) (lease.Grant, bool, error) {
	g := s.granted(ttl)
	f, ok, err := s.Acquire(ctx, name, owner, g)
	return lease.Grant{Fence: f, TTL: g, Handle: f}, ok, err
}

func (s *optMem) RefreshGrant(ctx context.Context, name, owner string, old lease.Grant, ttl time.Duration) (lease.Grant, bool, error) {
	g := s.granted(ttl)
	ok, err := s.Refresh(ctx, name, owner, g)
	return lease.Grant{Fence: old.Fence, TTL: g, Handle: old.Handle}, ok, err
}

func (s *optMem) ReleaseGrant(ctx context.Context, name, owner string, _ lease.Grant) (bool, error) {
	ok, err := s.Release(ctx, name, owner)
	return ok || s.releaseTrue, err
}

func (s *optMem) WaitFree(ctx context.Context, name string) error {
	if s.noWait {
		return nil
	}
	for {
		s.mu.Lock()
		_, held := s.held(s.key(name))
		s.mu.Unlock()
		if !held && !s.neverWakes {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func TestRunPassesOnACorrectOptionalStore(t *testing.T) {
	s := &optMem{memStore: newMem()}
	Run(t, func(*testing.T) lease.Store { return s }, ShortTTL(100*time.Millisecond))
}

// TestOptionalChecksCatchBrokenStores: each broken optional method fails
// the check aimed at it.
func TestOptionalChecksCatchBrokenStores(t *testing.T) {
	byName := checksByName(config{})
	cases := []struct {
		check string
		fault func(*optMem)
		want  string
	}{
		{"Grant", func(s *optMem) { s.roundDown = true }, "never down"},
		{"Grant", func(s *optMem) { s.releaseTrue = true }, "a repeated ReleaseGrant"},
		{"WaitFree", func(s *optMem) { s.noWait = true }, "busy loop"},
		{"WaitFree", func(s *optMem) { s.neverWakes = true }, "WaitFree of a free name"},
	}
	for _, tc := range cases {
		t.Run(tc.check+"/"+tc.want, func(t *testing.T) {
			s := &optMem{memStore: newMem()}
			tc.fault(s)
			mustCatch(t, byName, tc.check, s, selfTestConfig(), 20*time.Second, tc.want)
		})
	}
}
