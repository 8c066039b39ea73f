package dialects_test

import (
	"errors"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
)

func TestSupportsVersionBoundaries(t *testing.T) {
	for _, c := range []struct {
		name, version string
		feature       dialects.Feature
		want          bool
	}{
		{"mysql", "8.0.0", dialects.NoWait, false},
		{"mysql", "8.0.1", dialects.NoWait, true},
		{"mysql", "8.0.0", dialects.SkipLocked, false},
		{"mysql", "8.0.1", dialects.SkipLocked, true},
		{"mysql", "8.0.1", dialects.LockOf, true},
		{"mysql", "5.7.44", dialects.ForShare, true},
		{"mysql", "", dialects.ForUpdate, true},
		{"mysql", "", dialects.NoWait, false},
		{"mysql", "10.2.44-MariaDB", dialects.NoWait, false},
		{"mysql", "10.3.0-MariaDB", dialects.NoWait, true},
		{"mysql", "10.5.23-MariaDB", dialects.SkipLocked, false},
		{"mysql", "10.6.0-MariaDB", dialects.SkipLocked, true},
		{"mysql", "11.4.2-MariaDB", dialects.LockOf, false},
		{"mysql", "11.4.2-MariaDB", dialects.ForNoKeyUpdate, false},
		{"postgres", "", dialects.ForKeyShare, true},
		{"postgres", "", dialects.LockOf, true},
		{"oracle", "", dialects.ForShare, false},
		{"oracle", "", dialects.LockOf, false},
		{"oracle", "", dialects.SkipLocked, true},
		{"sqlserver", "", dialects.ForShare, true},
		{"sqlserver", "", dialects.ForNoKeyUpdate, false},
		{"sqlite", "", dialects.ForUpdate, false},
		{"sqlite", "", dialects.CapacityHolds, true},
		{"clickhouse", "", dialects.ForUpdate, false},
	} {
		if got := dialects.New(c.name, c.version).Supports(c.feature); got != c.want {
			t.Errorf("%s %s Supports(%s) = %v, want %v", c.name, c.version, c.feature, got, c.want)
		}
	}
}

func TestRequireMessages(t *testing.T) {
	for _, c := range []struct {
		name, version string
		feature       dialects.Feature
		want          string
	}{
		{"sqlite", "", dialects.ForUpdate, "lockplugin: FOR UPDATE is not supported on SQLite"},
		{"oracle", "", dialects.ForShare, "lockplugin: FOR SHARE is not supported on Oracle"},
		{"mysql", "5.7.44", dialects.SkipLocked, "lockplugin: SKIP LOCKED is not supported on MySQL 5.7.44 (needs MySQL 8.0.1 or later)"},
		{"mysql", "", dialects.NoWait, "lockplugin: NOWAIT is not supported on MySQL (needs MySQL 8.0.1 or later, and the dialector did not report the server version)"},
		{"mysql", "10.5.23-MariaDB", dialects.SkipLocked, "lockplugin: SKIP LOCKED is not supported on MariaDB 10.5.23 (needs MariaDB 10.6.0 or later)"},
		{"clickhouse", "", dialects.ForUpdate, `lockplugin: FOR UPDATE is not supported on unknown dialect "clickhouse" (lockplugin does not know this dialect, and will not guess its syntax)`},
	} {
		d := dialects.New(c.name, c.version)
		err := d.Require(c.feature)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s %s Require(%s) = %v, want %q", c.name, c.version, c.feature, err, c.want)
			continue
		}
		var ue *dialects.UnsupportedError
		if !errors.Is(err, dialects.ErrUnsupported) || !errors.As(err, &ue) || ue.Feature != string(c.feature) || ue.Dialect != d.String() {
			t.Errorf("Require(%s) = %#v: not an *UnsupportedError naming %s and %s", c.feature, err, d, c.feature)
		}
	}
	if err := dialects.New("postgres", "").Require(dialects.ForNoKeyUpdate); err != nil {
		t.Fatalf("PostgreSQL Require(FOR NO KEY UPDATE) = %v", err)
	}
}

// TestUnknownDialectRefusesEverything: a dialect lockplugin does not know
// gets an error for every feature, never a guess.
func TestUnknownDialectRefusesEverything(t *testing.T) {
	d := dialects.New("clickhouse", "24.1")
	for _, f := range []dialects.Feature{
		dialects.ForUpdate, dialects.ForShare, dialects.ForNoKeyUpdate, dialects.ForKeyShare,
		dialects.NoWait, dialects.SkipLocked, dialects.LockOf,
		dialects.AdvisoryLock, dialects.AdvisoryXactLock, dialects.CapacityHolds, dialects.LeaseTable,
	} {
		if d.Supports(f) || !errors.Is(d.Require(f), dialects.ErrUnsupported) {
			t.Errorf("unknown dialect: %s is not refused", f)
		}
	}
}
