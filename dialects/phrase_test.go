package dialects_test

import (
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
)

func TestLockSQL(t *testing.T) {
	for _, c := range []struct {
		name, version string
		feature       dialects.Feature
		want          string
	}{
		{"postgres", "", dialects.ForUpdate, "FOR UPDATE"},
		{"postgres", "", dialects.ForKeyShare, "FOR KEY SHARE"},
		{"postgres", "", dialects.SkipLocked, "SKIP LOCKED"},
		{"mysql", "8.0.36", dialects.ForShare, "FOR SHARE"},
		{"mysql", "8.0.0", dialects.ForShare, "LOCK IN SHARE MODE"},
		{"mysql", "5.7.44", dialects.ForShare, "LOCK IN SHARE MODE"},
		{"mysql", "5.7.44", dialects.NoWait, ""},
		{"mysql", "10.11.6-MariaDB", dialects.ForShare, "LOCK IN SHARE MODE"},
		{"mysql", "10.11.6-MariaDB", dialects.NoWait, "NOWAIT"},
		{"sqlserver", "", dialects.ForUpdate, "UPDLOCK, ROWLOCK"},
		{"sqlserver", "", dialects.ForShare, "HOLDLOCK, ROWLOCK"},
		{"sqlserver", "", dialects.NoWait, "NOWAIT"},
		{"sqlserver", "", dialects.SkipLocked, "READPAST"},
		{"sqlserver", "", dialects.LockOf, ""},
		{"oracle", "", dialects.ForUpdate, "FOR UPDATE"},
		{"oracle", "", dialects.ForShare, ""},
		{"sqlite", "", dialects.ForUpdate, ""},
	} {
		if got := dialects.New(c.name, c.version).LockSQL(c.feature); got != c.want {
			t.Errorf("%s %s LockSQL(%s) = %q, want %q", c.name, c.version, c.feature, got, c.want)
		}
	}
}

func TestQuoteIdent(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"postgres", "jobs", `"jobs"`},
		{"postgres", `a"b`, `"a""b"`},
		{"mysql", "a`b", "`a``b`"},
		{"sqlserver", "a]b", "[a]]b]"},
		{"sqlserver", "a[b", "[a[b]"},
		{"oracle", "JOBS", `"JOBS"`},
		{"sqlite", `x"`, `"x"""`},
	} {
		if got := dialects.New(c.name, "").QuoteIdent(c.in); got != c.want {
			t.Errorf("%s QuoteIdent(%q) = %s, want %s", c.name, c.in, got, c.want)
		}
	}
}
