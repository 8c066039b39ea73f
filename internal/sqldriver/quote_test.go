package sqldriver_test

import (
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

func TestValidTableName(t *testing.T) {
	for _, ok := range []string{"holds", "_h", "app.lock_leases", "t9", strings.Repeat("a", 56), strings.Repeat("s", 63) + ".t"} {
		if !sqldriver.ValidTableName(ok, 56) {
			t.Errorf("ValidTableName(%q) = false, want true", ok)
		}
	}
	for _, bad := range []string{"", "9t", "a.b.c", "a.", ".a", "t-1", "t;drop", `t"`, "app..t", strings.Repeat("a", 57), strings.Repeat("s", 64) + ".t", "tablé"} {
		if sqldriver.ValidTableName(bad, 56) {
			t.Errorf("ValidTableName(%q) = true, want false", bad)
		}
	}
}
