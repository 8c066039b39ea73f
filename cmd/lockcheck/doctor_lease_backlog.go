package main

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
)

// Lease backlog: doctor reports the lease table (-lease-table, by default
// sqlstore.DefaultTable) when more than leaseBacklog of its rows could be
// purged at the default retention: their lease is over and their name was
// last granted more than sqlstore.DefaultRetention ago. A Store removes
// such rows by itself, one batch of sqlstore.PurgeBatch a minute; a table
// that holds this many was left by stores with sqlstore.Retention(negative),
// or by batches that cannot keep up with the names taken, and keeps one
// row per name ever taken. The threshold is holds-backlog's: a table this
// large costs every purge batch a longer scan (there is no index on the
// expiry), and its size only grows.
const leaseBacklog = 100_000

// leaseBacklogAge is the age past which a row counts: the default
// retention, so that a store on the default settings is never reported
// for rows it has not yet had the time to remove.
const leaseBacklogAge = sqlstore.DefaultRetention

// leaseBacklogFinding counts, up to leaseBacklog+1, the rows of table that
// sqlstore's purge may delete at leaseBacklogAge, by the database clock:
// the store's own condition (sqldriver.LeasePurgeable), so that doctor
// counts exactly the rows a Purge would remove. The count is bounded
// (boundedCount); a table with fewer such rows is read through once.
// A missing table is no finding; any other failure is
// lease-backlog-unchecked (unchecked.go).
func leaseBacklogFinding(ctx context.Context, db *sql.DB, kind, table string) *finding {
	d := dialects.New(kind, "")
	now := drivers.For(d).NowMillis()
	if now == "" || !plainTable.MatchString(table) {
		return nil
	}
	purgeable := strings.NewReplacer("{now}", now, "{age}", strconv.FormatInt(leaseBacklogAge.Milliseconds(), 10)).Replace(sqldriver.LeasePurgeable)
	q := boundedCount(kind, table, purgeable, leaseBacklog+1)
	var n int64
	err := db.QueryRowContext(ctx, q).Scan(&n)
	if err != nil && !dialects.IsUndefinedTable(err) {
		return uncheckedFinding("lease-backlog", "a backlog of leases to purge", table, err, q)
	}
	if err != nil || n <= leaseBacklog {
		return nil
	}
	where := d.String()
	if kind == "mysql" {
		where = "MySQL/MariaDB" // the kind lockcheck's DSN gives both
	}
	return &finding{ID: "lease-backlog",
		Problem: fmt.Sprintf("more than %d rows of lease table %s are leases that are over (released or expired) whose name was last granted more than %v ago, and are still there: the stores' automatic retention is off (sqlstore.Retention with a negative value) or its batches (%d rows a minute per Store) do not keep up, so the table keeps a row for every name ever taken", leaseBacklog, table, leaseBacklogAge, sqlstore.PurgeBatch),
		Fix: fmt.Sprintf("on this %s database, for table %s: turn the automatic retention back on (drop sqlstore.Retention(negative) from sqlstore.New's options; the default keeps rows %v), or run store.Purge(ctx, %v) periodically (a cron job or a ticker in one process; once now for the backlog): it deletes only rows whose lease is over, in batches of %d, and never lets a fence go backwards",
			where, table, sqlstore.DefaultRetention, leaseBacklogAge, sqlstore.PurgeBatch)}
}
