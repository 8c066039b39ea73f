package sqlstore

import (
	"context"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/lease"
)

// TestZeroValues calls every method of a zero Store and a nil *Store:
// each returns an error naming sqlstore.New, none panics.
func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	for name, s := range map[string]*Store{"Store{}": {}, "(*Store)(nil)": nil} {
		for method, call := range map[string]func() error{
			"Acquire":      func() error { _, _, err := s.Acquire(ctx, "i18_zero", "o", 0); return err },
			"Release":      func() error { _, err := s.Release(ctx, "i18_zero", "o"); return err },
			"Refresh":      func() error { _, err := s.Refresh(ctx, "i18_zero", "o", 0); return err },
			"Holder":       func() error { _, _, err := s.Holder(ctx, "i18_zero"); return err },
			"Leases":       func() error { _, err := s.Leases(ctx); return err },
			"ForceRelease": func() error { _, err := s.ForceRelease(ctx, "i18_zero"); return err },
			"Guard":        func() error { return s.Guard(nil, &lease.Lease{}) },
		} {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s.%s panicked: %v", name, method, r)
					}
				}()
				if err := call(); err == nil || !strings.Contains(err.Error(), "sqlstore.New") {
					t.Errorf("%s.%s = %v, want an error naming sqlstore.New", name, method, err)
				}
			}()
		}
		if got := s.Table(); got != "" {
			t.Errorf("%s.Table = %q", name, got)
		}
	}
}

// TestNilOptionIgnored: a nil Option changes nothing.
func TestNilOptionIgnored(t *testing.T) {
	cfg, err := buildConfig([]Option{nil, Table("i18_leases"), nil})
	if err != nil || cfg.table != "i18_leases" || !cfg.create {
		t.Fatalf("buildConfig with nil options = %+v, %v", cfg, err)
	}
}
