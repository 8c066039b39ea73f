package sqlstore

import (
	"testing"
)

// TestNilOptionIgnored: a nil Option changes nothing.
func TestNilOptionIgnored(t *testing.T) {
	cfg, err := buildConfig([]Option{nil, Table("i18_leases"), nil})
	if err != nil || cfg.table != "i18_leases" || !cfg.create {
		t.Fatalf("buildConfig with nil options = %+v, %v", cfg, err)
	}
}
