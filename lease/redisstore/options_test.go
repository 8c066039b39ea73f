package redisstore

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestNilOptionIgnored: a nil Option changes nothing; an invalid one beside
// it is still reported.
func TestNilOptionIgnored(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	if s := New(c, nil, Prefix("p:"), nil); s.usable() != nil || s.Key("n") != "p:{n}" {
		t.Fatalf("nil options: usable = %v, Key = %q", s.usable(), s.Key("n"))
	}
	if err := New(c, nil, Prefix("{bad}")).usable(); err == nil || !strings.Contains(err.Error(), "Prefix") {
		t.Fatalf("invalid Prefix beside a nil option: %v", err)
	}
}
