package main

import (
	"fmt"
	"testing"
	"time"
)

// A holds table with more than holdsBacklog holds that expired unreleased
// two days ago is reported; holds that ended recently are not.
func TestDoctorHoldsBacklog(t *testing.T) {
	db, path := walFile(t, "holds.db")
	old := time.Now().Add(-48 * time.Hour).UnixMilli()
	recent := time.Now().Add(-time.Hour).UnixMilli()
	seed := func(n int, at int64) {
		t.Helper()
		q := fmt.Sprintf("WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM g WHERE n < %d) "+
			"INSERT INTO lockplugin_holds (resource_type, resource_id, holder, created_at, expires_at) SELECT 'i26_seats', '1', 'h', %d, %d FROM g", n, at-1000, at)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec("CREATE TABLE lockplugin_holds (id INTEGER PRIMARY KEY AUTOINCREMENT, resource_type VARCHAR(191) NOT NULL, resource_id VARCHAR(191) NOT NULL, " +
		"holder VARCHAR(255) NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NULL, released_at BIGINT NULL)"); err != nil {
		t.Fatal(err)
	}
	seed(holdsBacklog, recent) // ended an hour ago: not yet a backlog
	seed(holdsBacklog+1, old)
	code, ids := doctorOn(t, "-dsn", "sqlite:"+path)
	wantFindings(t, code, ids, "holds-backlog")
	if _, err := db.Exec("DELETE FROM lockplugin_holds WHERE id % 2 = 0 AND expires_at < ?", recent-1); err != nil {
		t.Fatal(err)
	}
	code, ids = doctorOn(t, "-dsn", "sqlite:"+path)
	wantFindings(t, code, ids)
}
