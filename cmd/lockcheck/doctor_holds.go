package main

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/holds"
)

// Holds backlog: doctor reports the default holds table when more than
// holdsBacklog holds in it ended (released, or expired without a Release)
// more than holdsBacklogAge ago. They no longer slow Acquire (the count
// skips them by the index), but nothing deletes them unless the
// application runs holds.Purge, so the table grows with every hold ever
// granted.
const (
	holdsBacklog    = 100_000
	holdsBacklogAge = 24 * time.Hour
)

// expiredHolds counts, up to holdsBacklog+1, the holds of holds.DefaultTable
// that ended before holdsBacklogAge ago by the database clock. A missing
// table is no finding; any other failure is holds-backlog-unchecked
// (unchecked.go).
func expiredHolds(ctx context.Context, db *sql.DB, kind string) (*finding, error) {
	now := drivers.For(dialects.New(kind, "")).NowMillis()
	if now == "" {
		return nil, nil
	}
	cut := fmt.Sprintf("(%s - %d)", now, holdsBacklogAge.Milliseconds())
	q := boundedCount(kind, holds.DefaultTable, fmt.Sprintf("released_at < %s OR (released_at IS NULL AND expires_at < %s)", cut, cut), holdsBacklog+1)
	var n int64
	err := db.QueryRowContext(ctx, q).Scan(&n)
	if err != nil && !dialects.IsUndefinedTable(err) {
		return uncheckedFinding("holds-backlog", "a backlog of ended holds", holds.DefaultTable, err, q), nil
	}
	if err != nil || n <= holdsBacklog {
		return nil, nil
	}
	return &finding{ID: "holds-backlog",
		Problem: fmt.Sprintf("more than %d holds in %s ended over %v ago (released, or expired without a Release) and are still there: nothing deletes them, so the table grows with every hold granted", holdsBacklog, holds.DefaultTable, holdsBacklogAge),
		Fix:     fmt.Sprintf("run holds.Purge(ctx, db, %v) periodically (a cron job or a ticker in one process); it deletes ended holds older than the age in batches of %d and never an active one", holdsBacklogAge, holds.PurgeBatch)}, nil
}
