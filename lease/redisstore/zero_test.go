package redisstore

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestZeroValues calls every method of a zero Store and a nil *Store:
// each returns an error naming redisstore.New, none panics.
func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	for name, s := range map[string]*Store{"Store{}": {}, "(*Store)(nil)": nil} {
		for method, call := range map[string]func() error{
			"Acquire":      func() error { _, _, err := s.Acquire(ctx, "i18_zero", "o", 0); return err },
			"Release":      func() error { _, err := s.Release(ctx, "i18_zero", "o"); return err },
			"Refresh":      func() error { _, err := s.Refresh(ctx, "i18_zero", "o", 0); return err },
			"Leases":       func() error { _, err := s.Leases(ctx); return err },
			"ForceRelease": func() error { _, err := s.ForceRelease(ctx, "i18_zero"); return err },
		} {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s.%s panicked: %v", name, method, r)
					}
				}()
				if err := call(); err == nil || !strings.Contains(err.Error(), "redisstore.New") {
					t.Errorf("%s.%s = %v, want an error naming redisstore.New", name, method, err)
				}
			}()
		}
		if k := s.Key("n"); k != DefaultPrefix+"{n}" {
			t.Errorf("%s.Key = %q, want New's default", name, k)
		}
	}
}

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
