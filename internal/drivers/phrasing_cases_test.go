package drivers_test

import (
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
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
		if got := drivers.For(dialects.New(c.name, c.version)).LockSQL(c.feature); got != c.want {
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
		if got := drivers.For(dialects.New(c.name, "")).LockClauseSQL(c.feature); got != c.want {
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
		if got := drivers.For(dialects.New(c.name, "")).QuoteTable(c.in); got != c.want {
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
		if s, ms := sqldriver.WaitSeconds(c.d), sqldriver.WaitMillis(c.d); s != c.secs || ms != c.msec {
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
		if got := drivers.For(dialects.New(c.name, c.version)).LockWaitSQL(300 * time.Millisecond); got != c.want {
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
		if got := drivers.For(dialects.New(c.name, "")).QuoteIdent(c.in); got != c.want {
			t.Errorf("%s QuoteIdent(%q) = %s, want %s", c.name, c.in, got, c.want)
		}
	}
}

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
		dd := dialects.New(c.dialector, "")
		d := drivers.For(dd)
		if got := d.BindVar(2); got != c.second {
			t.Errorf("%s: BindVar(2) = %q, want %q", dd, got, c.second)
		}
		if got := d.BigintBindVar(2); got != c.big {
			t.Errorf("%s: BigintBindVar(2) = %q, want %q", dd, got, c.big)
		}
		if got := d.ReusesBindVars(); got != c.reuses {
			t.Errorf("%s: ReusesBindVars = %v, want %v", dd, got, c.reuses)
		}
	}
}

func TestQuoteTable(t *testing.T) {
	for _, c := range []struct{ dialect, version, name, want string }{
		{"postgres", "", "billing.holds", `"billing"."holds"`},
		{"mysql", "8.0.36", "billing.holds", "`billing`.`holds`"},
		{"sqlserver", "", "dbo.holds", "[dbo].[holds]"},
		{"sqlite", "", "holds", `"holds"`},
	} {
		if got := drivers.For(dialects.New(c.dialect, c.version)).QuoteTable(c.name); got != c.want {
			t.Errorf("%s QuoteTable(%q) = %s, want %s", c.dialect, c.name, got, c.want)
		}
	}
}

// TestUnknownDatabasePhrasesNoLock: a database lockplugin does not know
// gets no lock phrase and no clock, never a guess.
func TestUnknownDatabasePhrasesNoLock(t *testing.T) {
	d := drivers.For(dialects.New("clickhouse", "24.1"))
	for _, f := range lockFeatures {
		if d.LockSQL(f) != "" {
			t.Errorf("unknown database: %s phrased", f)
		}
	}
	if d.NowMillis() != "" {
		t.Error("unknown database: NowMillis must be empty")
	}
}

func TestNowMillis(t *testing.T) {
	for _, name := range []string{"postgres", "mysql", "sqlserver", "oracle", "sqlite"} {
		if drivers.For(dialects.New(name, "")).NowMillis() == "" {
			t.Errorf("%s: no NowMillis", name)
		}
	}
}
