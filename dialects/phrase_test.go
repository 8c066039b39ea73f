package dialects_test

import (
	"testing"
	"time"

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

// TestLockClauseSQL: on SQL Server the clauses' modes conflict as FOR
// UPDATE and FOR SHARE do (X and S held to the end of the transaction);
// LockSQL keeps the update lock, which holds' resource-row lock uses.
func TestLockClauseSQL(t *testing.T) {
	for _, c := range []struct {
		name    string
		feature dialects.Feature
		want    string
	}{
		{"sqlserver", dialects.ForUpdate, "XLOCK, ROWLOCK"},
		{"sqlserver", dialects.ForShare, "REPEATABLEREAD, ROWLOCK"},
		{"sqlserver", dialects.NoWait, "NOWAIT"},
		{"sqlserver", dialects.ForNoKeyUpdate, ""},
		{"postgres", dialects.ForShare, "FOR SHARE"},
		{"oracle", dialects.ForShare, ""},
	} {
		if got := dialects.New(c.name, "").LockClauseSQL(c.feature); got != c.want {
			t.Errorf("%s LockClauseSQL(%s) = %q, want %q", c.name, c.feature, got, c.want)
		}
	}
}

func TestQuoteTableOracleSchema(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"oracle", "app.leases", `"APP"."leases"`},
		{"oracle", "App.LEASES", `"APP"."LEASES"`},
		{"oracle", "leases", `"leases"`},
		{"postgres", "app.leases", `"app"."leases"`},
		{"sqlserver", "app.leases", "[app].[leases]"},
	} {
		if got := dialects.New(c.name, "").QuoteTable(c.in); got != c.want {
			t.Errorf("%s QuoteTable(%q) = %s, want %s", c.name, c.in, got, c.want)
		}
	}
}

func TestWaitRounding(t *testing.T) {
	for _, c := range []struct {
		d          time.Duration
		secs, msec int64
	}{
		{time.Nanosecond, 1, 1},
		{300 * time.Millisecond, 1, 300},
		{time.Second, 1, 1000},
		{time.Second + time.Nanosecond, 2, 1001},
		{1500 * time.Microsecond, 1, 2},
		{2 * time.Second, 2, 2000},
	} {
		if s, ms := dialects.WaitSeconds(c.d), dialects.WaitMillis(c.d); s != c.secs || ms != c.msec {
			t.Errorf("%v: %d s, %d ms; want %d s, %d ms", c.d, s, ms, c.secs, c.msec)
		}
	}
	for _, c := range []struct{ name, version, want string }{
		{"oracle", "", "WAIT 1"},
		{"mysql", "10.11.6-MariaDB", "WAIT 1"},
		{"mysql", "10.2.44-MariaDB", ""},
		{"mysql", "8.0.36", ""},
		{"mysql", "5.7.44", ""},
		{"postgres", "", ""},
		{"sqlserver", "", ""},
		{"sqlite", "", ""},
	} {
		if got := dialects.New(c.name, c.version).LockWaitSQL(300 * time.Millisecond); got != c.want {
			t.Errorf("%s %s LockWaitSQL(300ms) = %q, want %q", c.name, c.version, got, c.want)
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
