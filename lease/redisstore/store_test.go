package redisstore

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/lease"
)

// hashTag returns the part of key that Redis Cluster hashes: the text
// between the first "{" and the next "}", when not empty; else the key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

func TestKeysShareAClusterSlot(t *testing.T) {
	s := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Prefix("app:"))
	names := []string{"order-42", "}x", "{", "}", "a{b}c", "{}", "заказ", strings.Repeat("x", 300)}
	seen := map[string]string{}
	for _, name := range names {
		k := s.Key(name)
		if !strings.HasPrefix(k, "app:") {
			t.Errorf("Key(%q) = %q, outside the prefix", name, k)
		}
		if tag := hashTag(k); tag == k || tag != hashTag(k+":fence") {
			t.Errorf("Key(%q) = %q: lock and fence keys hash as %q and %q; they must share a non-empty hash tag",
				name, k, tag, hashTag(k+":fence"))
		}
		if other, dup := seen[k]; dup {
			t.Errorf("names %q and %q share the key %q", other, name, k)
		}
		seen[k] = name
	}
	if got := s.Key("order-42"); got != "app:{order-42}" {
		t.Errorf("Key(order-42) = %q", got)
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, s := range []*Store{New(c, Prefix("a{b")), New(nil), New(c, nil)} {
		if _, _, err := s.Acquire(ctx, "n", "o", 0); err == nil {
			t.Error("a misconfigured store answered")
		}
	}
	s := New(c)
	if _, _, err := s.Acquire(ctx, "", "o", 0); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := s.Refresh(ctx, "n", "o", -time.Second); err == nil {
		t.Error("negative TTL accepted")
	}
	if millis(time.Nanosecond) != 1 || millis(0) != 0 || millis(1500*time.Microsecond) != 2 || millis(math.MaxInt64) <= 0 {
		t.Error("TTLs must round up to whole milliseconds, never down to 0 (no expiry) nor overflow")
	}
}

// TestUnreachable: a Redis that does not answer is an error, not a refusal,
// and Do does not run fn.
func TestUnreachable(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer c.Close()
	ran := false
	err := lease.NewManager(New(c)).Do(context.Background(), "n", func(context.Context) error { ran = true; return nil })
	if err == nil || errors.Is(err, lease.ErrNotAcquired) || ran {
		t.Fatalf("Do on a closed port: err=%v ran=%v; want a store error and fn not run", err, ran)
	}
}

func TestScriptsAreEmbedded(t *testing.T) {
	for name, src := range map[string]string{"acquire": acquireLua, "release": releaseLua, "refresh": refreshLua} {
		if !strings.Contains(src, "KEYS[1]") {
			t.Errorf("%s.lua not embedded", name)
		}
	}
}

// TestKeysAreKeyAndFence: the scripts' KEYS, built in one allocation,
// are Key(name) and Key(name)+":fence" for every kind of name.
func TestKeysAreKeyAndFence(t *testing.T) {
	s := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Prefix("app:"))
	for _, name := range []string{"order-42", "}x", "{", "a{b}c", "заказ", strings.Repeat("x", 300)} {
		got := s.keys(name)
		if len(got) != 2 || got[0] != s.Key(name) || got[1] != s.Key(name)+":fence" {
			t.Errorf("keys(%q) = %q, want [%q %q]", name, got, s.Key(name), s.Key(name)+":fence")
		}
	}
}
