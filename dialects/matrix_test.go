package dialects_test

import (
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
)

func TestMechanismMatrix(t *testing.T) {
	md := dialects.MechanismMatrix().Markdown()
	for _, row := range []string{
		"| database | advisory lock | transaction-scoped advisory lock | lease table store | capacity holds | queue claim | fenced write |",
		"| PostgreSQL | yes | yes | yes | yes | yes: 1 statement, UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING | yes |",
		"| MySQL 5.7 | yes | error | yes | yes | error | yes |",
		"| SQLite | error | error | yes | yes: writer lock taken up front | yes: 1 statement, UPDATE ... RETURNING (SQLite 3.35+) | yes |",
	} {
		if !strings.Contains(md, row+"\n") {
			t.Errorf("mechanism matrix lacks the row\n%s\nin\n%s", row, md)
		}
	}
}

func TestNote(t *testing.T) {
	for _, c := range []struct {
		name, version string
		feature       dialects.Feature
		want          string
	}{
		{"postgres", "", dialects.LockWait, "`SET LOCAL lock_timeout`, restored after"},
		{"postgres", "", dialects.ForUpdate, ""},
		{"mysql", "10.6.0-MariaDB", dialects.QueueClaim, "SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE, in a transaction"},
		// A row the version does not reach has no note: the feature is refused.
		{"mysql", "10.5.23-MariaDB", dialects.QueueClaim, ""},
		{"sqlite", "", dialects.AdvisoryLock, ""},
	} {
		if got := dialects.New(c.name, c.version).Note(c.feature); got != c.want {
			t.Errorf("%s %s Note(%s) = %q, want %q", c.name, c.version, c.feature, got, c.want)
		}
	}
	for _, p := range dialects.Profiles() {
		if p.Dialect.Kind == dialects.Unknown {
			t.Errorf("profile %q is not a known database", p.Label)
		}
	}
}
