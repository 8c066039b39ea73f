package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/internal/testdb"
)

// i22NullVersions makes a table whose version column was added after its
// rows (nullable, no default: every row NULL), as an older lockplugin's
// AutoMigrate left it, and a second one whose rows are all versioned.
var i22NullVersions = []string{
	"CREATE TABLE i22_doctor_orders (id BIGINT PRIMARY KEY, total BIGINT NOT NULL)",
	"INSERT INTO i22_doctor_orders (id, total) VALUES (1, 10), (2, 20), (3, 30)",
	"ALTER TABLE i22_doctor_orders ADD COLUMN version BIGINT",
	"CREATE TABLE i22_doctor_books (id BIGINT PRIMARY KEY, lock_version BIGINT)",
	"INSERT INTO i22_doctor_books (id, lock_version) VALUES (1, 1), (2, 4)",
}

// versionFindings runs doctor on dsn and returns its findings about
// i22_doctor_ tables.
func versionFindings(t *testing.T, dsn string) []finding {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := runContext(context.Background(), []string{"doctor", "-json", "-dsn", dsn, "-lease-table", i17Table}, &out, &errOut); code == exitUsage {
		t.Fatalf("doctor: exit 2: %s", errOut.String())
	}
	var fs, mine []finding
	if err := json.Unmarshal(out.Bytes(), &fs); err != nil {
		t.Fatalf("doctor output %q: %v", out.String(), err)
	}
	for _, f := range fs {
		if strings.HasPrefix(f.ID, "version-null") && strings.Contains(f.Problem, "i22_doctor_") {
			t.Logf("finding %s: %s (fix: %s)", f.ID, f.Problem, f.Fix)
			mine = append(mine, f)
		}
	}
	return mine
}

func TestDoctorNullVersions(t *testing.T) {
	for _, kind := range []string{"sqlite", testdb.Postgres, testdb.MySQL} {
		t.Run(kind, func(t *testing.T) {
			var db *sql.DB
			var dsn string
			switch kind {
			case "sqlite":
				path := filepath.Join(t.TempDir(), "v.db")
				dsn = "sqlite:" + path
				var err error
				if db, err = sql.Open("sqlite", path); err != nil {
					t.Fatal(err)
				}
				defer db.Close()
			default:
				tg := testdb.Get(t, kind)
				db, dsn = tg.SQL, tg.DSN
				if kind == testdb.MySQL {
					dsn = "mysql://" + dsn
				}
			}
			drop := func() {
				for _, tb := range []string{"i22_doctor_orders", "i22_doctor_books"} {
					_, _ = db.Exec("DROP TABLE IF EXISTS " + tb)
				}
			}
			drop()
			t.Cleanup(drop)
			for _, q := range i22NullVersions {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			fs := versionFindings(t, dsn)
			if len(fs) != 1 || fs[0].ID != "version-null" || !strings.Contains(fs[0].Problem, "3 row(s) of ") ||
				!strings.Contains(fs[0].Problem, "i22_doctor_orders") || !strings.Contains(fs[0].Fix, "SET ") ||
				!strings.Contains(fs[0].Fix, "= 1 WHERE ") {
				t.Fatalf("want one version-null finding for the 3 rows of i22_doctor_orders, got %+v", fs)
			}
			if _, err := db.Exec("UPDATE i22_doctor_orders SET version = 1 WHERE version IS NULL"); err != nil {
				t.Fatal(err)
			}
			if fs := versionFindings(t, dsn); len(fs) != 0 {
				t.Fatalf("after the backfill: %+v", fs)
			}
		})
	}
}
