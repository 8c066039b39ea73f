package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

var _ lease.Waiter = (*Store)(nil)

// WaitFree blocks until name may be free, so that a waiting Acquire
// (WaitAtMost) wakes on a release instead of polling every PollInterval.
// The release script publishes on the channel <key>:released; WaitFree
// subscribes to it, then reads the key's remaining TTL, and returns nil
// when the key is absent, on a release message, or when that TTL has run
// out (an expiry publishes nothing). It returns ctx's error when ctx ends
// first, and an error when it cannot subscribe or read: Manager then
// polls, as it does for a store without WaitFree.
//
// Every waiter wakes on a release and tries once: Redis cannot queue
// waiters, so the one whose Acquire arrives first wins. ForceRelease
// publishes on the same channel.
func (s *Store) WaitFree(ctx context.Context, name string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return errors.New("redisstore: nil context")
	}
	if name == "" {
		return errors.New("redisstore: empty lock name")
	}
	k := s.Key(name)
	sub := s.client.Subscribe(ctx, k+":released")
	defer sub.Close()
	// Subscribed before the read: a release after the read is not missed.
	if _, err := sub.Receive(ctx); err != nil {
		return fmt.Errorf("redisstore: subscribing to %q's releases: %w", name, err)
	}
	ttl, err := s.client.PTTL(ctx, k).Result()
	if err != nil {
		return fmt.Errorf("redisstore: waiting for %q: %w", name, err)
	}
	var expiry <-chan time.Time
	switch {
	case ttl == -2: // no key: free now
		return nil
	case ttl > 0:
		t := time.NewTimer(ttl)
		defer t.Stop()
		expiry = t.C
	}
	select {
	case _, ok := <-sub.Channel():
		if !ok {
			return ctx.Err()
		}
		return nil
	case <-expiry:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
