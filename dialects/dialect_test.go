package dialects_test

import (
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

func TestNewRecognises(t *testing.T) {
	for _, c := range []struct {
		name, version       string
		kind                dialects.Kind
		major, minor, patch int
		label               string
	}{
		{"postgres", "", dialects.Postgres, 0, 0, 0, "PostgreSQL"},
		{"pgx", "", dialects.Postgres, 0, 0, 0, "PostgreSQL"},
		{"PostgreSQL", "16.2", dialects.Postgres, 16, 2, 0, "PostgreSQL"},
		{"cockroachdb", "", dialects.Postgres, 0, 0, 0, "CockroachDB"},
		{"mysql", "8.0.36", dialects.MySQL, 8, 0, 36, "MySQL 8.0.36"},
		{"mysql", "5.7.44-log", dialects.MySQL, 5, 7, 44, "MySQL 5.7.44"},
		{"mysql", "8.4.0-TiDB-v7.5.0", dialects.MySQL, 8, 4, 0, "TiDB 7.5.0"},
		{"mysql", "8.0.11-TiDB-v8.4.0-this-is-a-placeholder", dialects.MySQL, 8, 0, 11, "TiDB 8.4.0"},
		{"postgres", "CockroachDB CCL v23.2.4 (x86_64-pc-linux-gnu, built 2024/04/08 16:21:58, go1.21.9 X:nocoverageredesign)", dialects.Postgres, 23, 2, 4, "CockroachDB 23.2.4"},
		{"postgres", "PostgreSQL 11.2-YB-2.20.1.0-b0 on x86_64-pc-linux-gnu, compiled by clang version 16", dialects.Postgres, 11, 2, 0, "YugabyteDB 2.20.1.0"},
		{"mysql", "10.11.6-MariaDB", dialects.MariaDB, 10, 11, 6, "MariaDB 10.11.6"},
		{"mysql", "10.11.19-MariaDB-0+deb12u1", dialects.MariaDB, 10, 11, 19, "MariaDB 10.11.19"},
		{"mysql", "11.4.2-MariaDB-ubu2404", dialects.MariaDB, 11, 4, 2, "MariaDB 11.4.2"},
		// MariaDB behind the MySQL replication prefix.
		{"mysql", "5.5.5-10.5.23-MariaDB", dialects.MariaDB, 10, 5, 23, "MariaDB 10.5.23"},
		{"mysql", "", dialects.MySQL, 0, 0, 0, "MySQL"},
		{"sqlserver", "", dialects.SQLServer, 0, 0, 0, "SQL Server"},
		{"mssql", "", dialects.SQLServer, 0, 0, 0, "SQL Server"},
		{"oracle", "", dialects.Oracle, 0, 0, 0, "Oracle"},
		{"godror", "", dialects.Oracle, 0, 0, 0, "Oracle"},
		{"sqlite", "", dialects.SQLite, 0, 0, 0, "SQLite"},
		{"sqlite3", "3.45.1", dialects.SQLite, 3, 45, 1, "SQLite"},
		{"clickhouse", "24.1", dialects.Unknown, 24, 1, 0, `unknown dialect "clickhouse"`},
		{"", "", dialects.Unknown, 0, 0, 0, `unknown dialect ""`},
	} {
		d := dialects.New(c.name, c.version)
		if d.Kind != c.kind || d.Major != c.major || d.Minor != c.minor || d.Patch != c.patch {
			t.Errorf("New(%q, %q) = %s %d.%d.%d, want %s %d.%d.%d", c.name, c.version,
				d.Kind, d.Major, d.Minor, d.Patch, c.kind, c.major, c.minor, c.patch)
		}
		if got := d.String(); got != c.label {
			t.Errorf("New(%q, %q).String() = %q, want %q", c.name, c.version, got, c.label)
		}
		if d.Dialector != c.name || d.Version != c.version {
			t.Errorf("New(%q, %q) kept %q, %q", c.name, c.version, d.Dialector, d.Version)
		}
	}
}

func TestOfReadsTheDialector(t *testing.T) {
	db, err := dryrun.Open("mysql", "10.6.17-MariaDB")
	if err != nil {
		t.Fatal(err)
	}
	d := dialects.Of(db)
	if d.Kind != dialects.MariaDB || !d.AtLeast(10, 6, 0) || d.Version != "10.6.17-MariaDB" {
		t.Fatalf("Of(MariaDB stand-in) = %+v", d)
	}
	if !d.IsMySQLFamily() || dialects.New("postgres", "").IsMySQLFamily() {
		t.Fatal("IsMySQLFamily is wrong")
	}
	if got := dialects.Of(nil); got.Kind != dialects.Unknown {
		t.Fatalf("Of(nil) = %+v", got)
	}
	if got := dialects.FromDialector(nil); got.Kind != dialects.Unknown {
		t.Fatalf("FromDialector(nil) = %+v", got)
	}
}

func TestAtLeast(t *testing.T) {
	d := dialects.New("mysql", "8.0.1")
	for _, c := range []struct {
		v    [3]int
		want bool
	}{
		{[3]int{8, 0, 1}, true}, {[3]int{8, 0, 0}, true}, {[3]int{7, 9, 9}, true},
		{[3]int{8, 0, 2}, false}, {[3]int{8, 1, 0}, false}, {[3]int{9, 0, 0}, false},
	} {
		if got := d.AtLeast(c.v[0], c.v[1], c.v[2]); got != c.want {
			t.Errorf("8.0.1 AtLeast(%v) = %v", c.v, got)
		}
	}
	unknown := dialects.New("mysql", "")
	if unknown.VersionKnown() || unknown.AtLeast(0, 0, 1) || !unknown.AtLeast(0, 0, 0) {
		t.Fatal("an unknown version must satisfy nothing above 0.0.0")
	}
}
