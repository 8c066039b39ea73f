package main

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// TestDoctorClaimIndex: a queue table (claimed_at and state) without an
// index leading with state is a claim-index finding; with the index it
// is none.
func TestDoctorClaimIndex(t *testing.T) {
	good := filepath.Join(t.TempDir(), "queue.db")
	db, err := sql.Open("sqlite", good)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// As the application's DSN would have it: doctor opens the file read-only
	// and reports a journal mode other than WAL.
	if _, err := db.Exec("PRAGMA journal_mode=WAL"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE i23_doctor_jobs (id INTEGER PRIMARY KEY, state TEXT NOT NULL, claimed_at DATETIME)"); err != nil {
		t.Fatal(err)
	}
	code, ids := doctorOn(t, "-dsn", "sqlite:"+good)
	wantFindings(t, code, ids, "claim-index")
	if _, err := db.Exec("CREATE INDEX i23_doctor_jobs_claim ON i23_doctor_jobs (state, id)"); err != nil {
		t.Fatal(err)
	}
	code, ids = doctorOn(t, "-dsn", "sqlite:"+good)
	wantFindings(t, code, ids)
}
