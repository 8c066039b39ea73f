package main

import "testing"

// TestDoctorClaimIndex: a queue table (claimed_at and state) without an
// index leading with state is a claim-index finding; with the index it
// is none.
func TestDoctorClaimIndex(t *testing.T) {
	db, good := walFile(t, "queue.db")
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
