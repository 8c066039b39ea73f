package dialects_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
)

// TestRefusalsSayWhatToUse: a refusal whose fix is not in its name says
// what to use instead, besides naming the database and the feature.
func TestRefusalsSayWhatToUse(t *testing.T) {
	for _, c := range []struct {
		name, version string
		feature       dialects.Feature
		want          []string
	}{
		{"sqlite", "", dialects.AdvisoryLock, []string{"advisory lock is not supported on SQLite", "lease.NewLocalStore", "lease/sqlstore", "holds", "Version"}},
		{"sqlite", "", dialects.AdvisoryXactLock, []string{"on SQLite", "lease"}},
		{"mysql", "10.11.6-MariaDB", dialects.ForNoKeyUpdate, []string{"FOR NO KEY UPDATE is not supported on MariaDB 10.11.6", "use ForUpdate"}},
		{"mysql", "8.0.36", dialects.ForNoKeyUpdate, []string{"on MySQL 8.0.36", "use ForUpdate"}},
		{"sqlserver", "", dialects.ForKeyShare, []string{"FOR KEY SHARE is not supported on SQL Server", "use ForShare"}},
	} {
		err := dialects.New(c.name, c.version).Require(c.feature)
		if !errors.Is(err, dialects.ErrUnsupported) {
			t.Fatalf("%s %s: %v, want ErrUnsupported", c.name, c.feature, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %s: %q lacks %q", c.name, c.feature, err, w)
			}
		}
	}
	// Where FOR UPDATE itself is missing there is no "use ForUpdate".
	if err := dialects.New("sqlite", "").Require(dialects.ForNoKeyUpdate); strings.Contains(err.Error(), "use ForUpdate") {
		t.Errorf("SQLite: %q", err)
	}
}
