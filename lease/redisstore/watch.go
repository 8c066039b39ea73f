package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/lease"
)

// Channel suffixes: the scripts publish a release (release.lua,
// force_release.lua) on <key>:released and a grant (acquire.lua, not a
// refresh nor the same owner's retry) on <key>:acquired.
const (
	releasedSuffix = ":released"
	acquiredSuffix = ":acquired"
)

// watchSetup bounds a watch's start: the subscription's confirmation and
// the first read of the key's remaining TTL.
const watchSetup = lease.DefaultCallTimeout

// WatchRelease returns a channel that receives a signal each time name
// may have become free: its lease released (Release or ForceRelease), or
// expired. Package election's Campaign uses it (its Watcher interface) to
// try at once instead of at its next poll.
//
// It subscribes, on one connection of its own for as long as ctx lives,
// to the channels the scripts publish on (<key>:released and
// <key>:acquired), then reads the key's remaining TTL (PTTL). An expiry
// publishes nothing, so a timer set from that TTL stands for it: when it
// runs out the watch reads the TTL again, signals if the key has gone,
// and otherwise (the holder refreshed it) sets the timer again. A grant
// message makes it read the new holder's TTL. An idle watch therefore
// costs about one PTTL per TTL of the lease it watches, and nothing while
// the name is free.
//
// The channel is closed when the watch ends: ctx ended, the subscription's
// connection failed (a failover of the server, the Sentinel primary or
// the Cluster node that serves it), or a TTL read failed. The caller then
// polls and watches again (Campaign does). A signal is a hint, not a
// value: signals are merged while unread. A release the watch misses
// (one published before the subscription, or by a client whose scripts
// publish nothing: an older version of this package) is found at the
// caller's next poll.
//
// On Redis Cluster the subscription is on the primary of the key's slot
// (go-redis picks it from the channel name, which carries the key's hash
// tag); PUBLISH reaches every node of the cluster, so a subscription left
// on a node that is no longer that slot's primary still hears it.
func (s *Store) WatchRelease(ctx context.Context, name string) (<-chan struct{}, error) {
	return s.watch(ctx, name, false)
}

// WatchHolder is WatchRelease that also signals each grant (a new holder,
// a new fence): package election's Observe (its HolderWatcher interface)
// reads the holder at once instead of at its next poll. A refresh
// signals nothing.
func (s *Store) WatchHolder(ctx context.Context, name string) (<-chan struct{}, error) {
	return s.watch(ctx, name, true)
}

// watch subscribes to name's channels and reads its TTL before
// returning (so that a release after it returns is signalled), then
// follows them in a goroutine until ctx ends or the subscription or a
// read fails. grants says whether a grant is signalled too.
func (s *Store) watch(ctx context.Context, name string, grants bool) (<-chan struct{}, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, errors.New("redisstore: nil context")
	}
	if name == "" {
		return nil, errors.New("redisstore: empty lock name")
	}
	k := s.Key(name)
	released, acquired := k+releasedSuffix, k+acquiredSuffix
	sctx, cancel := context.WithTimeout(ctx, watchSetup)
	defer cancel()
	sub := s.client.Subscribe(sctx, released, acquired)
	// Both confirmations before the read: one SUBSCRIBE of two channels
	// answers both before any message.
	for range 2 {
		if _, err := sub.Receive(sctx); err != nil {
			_ = sub.Close()
			return nil, fmt.Errorf("redisstore: subscribing to %q's releases (%s): %w", name, released, err)
		}
	}
	ttl, err := s.client.PTTL(sctx, k).Result()
	if err != nil {
		_ = sub.Close()
		return nil, fmt.Errorf("redisstore: watching %q: reading its TTL: %w", name, err)
	}

	msgs := make(chan string)    // the channel of each message received
	stop := make(chan struct{})  // closed when the watch ends
	recvd := make(chan struct{}) // closed when the receiver has returned
	go func() {
		defer close(recvd)
		defer close(msgs)
		for {
			// Close (below) ends a blocked Receive; ctx alone does not.
			m, err := sub.Receive(context.WithoutCancel(ctx))
			if err != nil {
				return
			}
			if msg, ok := m.(*redis.Message); ok {
				select {
				case msgs <- msg.Channel:
				case <-stop:
					return
				}
			}
		}
	}()

	out := make(chan struct{}, 1)
	signal := func() {
		select {
		case out <- struct{}{}:
		default: // one unread signal says it all
		}
	}
	go func() {
		defer close(out)
		defer func() { close(stop); _ = sub.Close(); <-recvd }()
		expiry := time.NewTimer(time.Hour)
		expiry.Stop()
		defer expiry.Stop()
		// arm sets the timer from a PTTL answer, and reports whether the
		// key is absent.
		arm := func(ttl time.Duration) (absent bool) {
			expiry.Stop()
			select { // drain a value sent meanwhile (Go < 1.23 timers)
			case <-expiry.C:
			default:
			}
			switch {
			case ttl == -2: // no key
				return true
			case ttl >= 0:
				expiry.Reset(ttl + time.Millisecond) // past the server's expiry
			} // -1: no expiry, nothing to time
			return false
		}
		pttl := func() (time.Duration, bool) {
			rctx, cancel := context.WithTimeout(ctx, watchSetup)
			defer cancel()
			d, err := s.client.PTTL(rctx, k).Result()
			return d, err == nil
		}
		arm(ttl)
		for {
			select {
			case <-ctx.Done():
				return
			case ch, ok := <-msgs:
				if !ok {
					return // the subscription broke
				}
				switch ch {
				case released:
					arm(-2) // nothing held, nothing to time until a grant
					signal()
				case acquired:
					if grants {
						signal()
					}
					d, ok := pttl()
					if !ok {
						return
					}
					if arm(d) {
						signal() // taken and gone again already
					}
				}
			case <-expiry.C:
				d, ok := pttl()
				if !ok {
					return
				}
				if arm(d) {
					signal() // expired
				}
			}
		}
	}()
	return out, nil
}
