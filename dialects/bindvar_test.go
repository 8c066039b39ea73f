package dialects_test

import (
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
)

func TestBindVar(t *testing.T) {
	for _, c := range []struct {
		dialector   string
		second, big string
		reuses      bool
	}{
		{"postgres", "$2", "CAST($2 AS BIGINT)", true},
		{"sqlserver", "@p2", "@p2", true},
		{"oracle", ":2", ":2", false},
		{"mysql", "?", "?", false},
		{"sqlite", "?", "?", false},
	} {
		d := dialects.New(c.dialector, "")
		if got := d.BindVar(2); got != c.second {
			t.Errorf("%s: BindVar(2) = %q, want %q", d, got, c.second)
		}
		if got := d.BigintBindVar(2); got != c.big {
			t.Errorf("%s: BigintBindVar(2) = %q, want %q", d, got, c.big)
		}
		if got := d.ReusesBindVars(); got != c.reuses {
			t.Errorf("%s: ReusesBindVars = %v, want %v", d, got, c.reuses)
		}
	}
}
