package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed force_release.lua
	forceReleaseLua    string
	forceReleaseScript = redis.NewScript(forceReleaseLua)
)

// Entry is one lease held in Redis, as Leases reads it.
type Entry struct {
	// Name is the lock name, or "#<hex>" (its SHA-256) for names with
	// braces, which the store keys by hash.
	Name string
	// Owner is the holder's owner token.
	Owner string
	// Fence is the name's fencing counter: the holder's fence unless a
	// newer acquire raced the read.
	Fence int64
	// ExpiresAt is when the key expires, by this host's clock from the
	// key's PTTL; zero for a lease without expiry.
	ExpiresAt time.Time
}

// Leases lists the leases under the store's prefix, by SCAN (it does not
// block the server as KEYS would), in name order. The listing is not a
// snapshot: leases taken or released while it runs may or may not show.
// On a Cluster client it scans the node the client routes SCAN to; use a
// client per master there.
func (s *Store) Leases(ctx context.Context) ([]Entry, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, errors.New("redisstore: nil context")
	}
	var out []Entry
	iter := s.client.Scan(ctx, 0, escapeGlob(s.prefix)+"*", 500).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if strings.HasSuffix(k, ":fence") {
			continue
		}
		rest := strings.TrimPrefix(k, s.prefix)
		var name string
		switch {
		case strings.HasPrefix(rest, "{") && strings.HasSuffix(rest, "}"):
			name = rest[1 : len(rest)-1]
		case strings.HasPrefix(rest, "#{") && strings.HasSuffix(rest, "}"):
			name = "#" + rest[2:len(rest)-1]
		default:
			continue // not a lease key of this store
		}
		owner, err := s.client.Get(ctx, k).Result()
		if errors.Is(err, redis.Nil) {
			continue // released since the scan saw it
		}
		if err != nil {
			return nil, fmt.Errorf("redisstore: listing leases: %w", err)
		}
		e := Entry{Name: name, Owner: owner}
		if ttl, err := s.client.PTTL(ctx, k).Result(); err == nil && ttl > 0 {
			e.ExpiresAt = time.Now().Add(ttl)
		}
		if f, err := s.client.Get(ctx, k+":fence").Result(); err == nil {
			e.Fence, _ = strconv.ParseInt(f, 10, 64)
		}
		out = append(out, e)
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("redisstore: listing leases: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ForceRelease is an operator's release of name's lease whoever holds it:
// it deletes the key and moves the fencing counter on, in one script, so
// that the next holder's fence is above the old holder's. It reports
// whether a lease was held, and publishes the release as Release does
// (WaitFree, WatchRelease and WatchHolder wake on it). The old holder learns it at its next Refresh
// (ErrLeaseLost) and may act until its own safety deadline: what the
// lease protects must check fences for the release to be safe at once.
func (s *Store) ForceRelease(ctx context.Context, name string) (bool, error) {
	if err := s.usable(); err != nil {
		return false, err
	}
	if ctx == nil {
		return false, errors.New("redisstore: nil context")
	}
	if name == "" {
		return false, errors.New("redisstore: empty lock name")
	}
	k := s.Key(name)
	n, err := forceReleaseScript.Run(ctx, s.client, []string{k, k + ":fence"}).Int64()
	if err != nil {
		return false, fmt.Errorf("redisstore: force-release: %w", err)
	}
	return n == 1, nil
}

// escapeGlob escapes SCAN MATCH's special characters in a prefix.
func escapeGlob(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
	return r.Replace(s)
}
