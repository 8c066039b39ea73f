package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease/sqlstore"
)

// A lease table (sqlstore's default name and row format) with exactly
// leaseBacklog rows that a purge at the default retention would delete is
// not reported, and one more is. Beside them stand one row of each kind
// the count must skip, any of which, counted, would make the first run
// report: a name released an hour ago (within the retention), a lease
// first granted two days ago and still live (refreshed), and one without
// expiry (reported as lease-no-expiry instead).
func TestDoctorLeaseBacklog(t *testing.T) {
	db, path := walFile(t, "leases.db")
	ddl, err := sqlstore.CreateTableSQL("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ddl); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old := now.Add(-2 * leaseBacklogAge).UnixMilli()
	recent := now.Add(-time.Hour).UnixMilli()
	// Fences as the store hands them out: the grant's epoch ms times 1000
	// (plus a count, as repeated grants within a millisecond would).
	// Half of the old rows were released (-1), half expired a minute after
	// their grant without a Release.
	q := fmt.Sprintf("WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM g WHERE n < %d) "+
		"INSERT INTO %s (lock_name, owner, expires_at, fence) SELECT 'old-' || n, 'o', CASE WHEN n %% 2 = 0 THEN -1 ELSE %d END, %d * 1000 + n FROM g",
		leaseBacklog, sqlstore.DefaultTable, old+time.Minute.Milliseconds(), old)
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name         string
		expiresAt, f int64
	}{
		{"released-recently", -1, recent * 1000},
		{"live-since-old", now.Add(time.Hour).UnixMilli(), old * 1000},
		{"no-expiry-since-old", 0, old * 1000},
	} {
		if _, err := db.Exec("INSERT INTO "+sqlstore.DefaultTable+" (lock_name, owner, expires_at, fence) VALUES (?, 'o', ?, ?)", r.name, r.expiresAt, r.f); err != nil {
			t.Fatal(err)
		}
	}
	code, ids := doctorOn(t, "-dsn", "sqlite:"+path)
	wantFindings(t, code, ids, "lease-no-expiry")
	if _, err := db.Exec("INSERT INTO "+sqlstore.DefaultTable+" (lock_name, owner, expires_at, fence) VALUES ('one-more', 'o', -1, ?)", old*1000); err != nil {
		t.Fatal(err)
	}
	code, ids = doctorOn(t, "-dsn", "sqlite:"+path)
	wantFindings(t, code, ids, "lease-no-expiry", "lease-backlog")
}
