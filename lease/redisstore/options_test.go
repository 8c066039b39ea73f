package redisstore

import (
	"strings"
	"testing"
	"time"

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

// TestReplicationOptions: the replication options refuse bad values and a
// client that cannot WAIT, before any call reaches Redis.
func TestReplicationOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for name, opt := range map[string]Option{
		"WaitReplicas(0)":         WaitReplicas(0, time.Second),
		"WaitReplicas(1, 0)":      WaitReplicas(1, 0),
		"WaitAllReplicas(0)":      WaitAllReplicas(0, time.Second),
		"WaitAllReplicas(1, -1s)": WaitAllReplicas(1, -time.Second),
	} {
		if err := New(c, opt).usable(); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	s := New(c, WaitAllReplicas(2, time.Second), AllowUnackedReplicas())
	if s.usable() != nil || !s.waitAll || s.replicas != 2 {
		t.Errorf("WaitAllReplicas(2): usable %v, waitAll %v, replicas %d", s.usable(), s.waitAll, s.replicas)
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	if err := New(ring, WaitAllReplicas(1, time.Second)).usable(); err == nil || !strings.Contains(err.Error(), "WaitAllReplicas") {
		t.Errorf("WaitAllReplicas on a Ring: %v, want an error naming the option", err)
	}
}
