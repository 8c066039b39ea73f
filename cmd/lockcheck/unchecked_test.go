package main

import (
	"testing"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/internal/testdb"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
)

// TestDoctorTableChecksUnchecked: a lease table and a holds table under
// the library's names but of another shape. The three table checks fail
// on them and say so (before, each read its failure as a clean result and
// doctor exited 0); a missing table is still no finding (the Plain tests
// and TestDoctorSQLite run without them).
func TestDoctorTableChecksUnchecked(t *testing.T) {
	db, path := walFile(t, "other.db")
	for _, table := range []string{sqlstore.DefaultTable, holds.DefaultTable} {
		if _, err := db.Exec("CREATE TABLE " + table + " (id INTEGER PRIMARY KEY, note TEXT)"); err != nil {
			t.Fatal(err)
		}
	}
	code, ids := doctorOn(t, "-dsn", "sqlite:"+path)
	wantFindings(t, code, ids, "lease-no-expiry-unchecked", "lease-backlog-unchecked", "holds-backlog-unchecked")
}

// TestDoctorTableChecksUncheckedPostgres: the same on PostgreSQL, whose
// missing column (SQLSTATE 42703) must not pass for a missing table
// (42P01).
func TestDoctorTableChecksUncheckedPostgres(t *testing.T) {
	tg := testdb.Get(t, testdb.Postgres)
	const table = "i27_doctor_other_shape"
	if err := tg.DB.Exec("CREATE TABLE IF NOT EXISTS " + table + " (id INT PRIMARY KEY, note TEXT)").Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.DB.Exec("DROP TABLE IF EXISTS " + table) })
	code, ids := doctorOn(t, "-dsn", tg.DSN, "-lease-table", table)
	wantFindings(t, code, ids, "lease-no-expiry-unchecked", "lease-backlog-unchecked")
}
