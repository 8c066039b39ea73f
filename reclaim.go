package lockplugin

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/internal/ctxjoin"
	"github.com/lockplugin/lockplugin/internal/plugin"
)

// Reclaim re-queues claimed rows whose worker never finished them: it sets
// set on the rows of T's table (or db.Table's) that match where and whose
// claimedAt column is more than timeout in the past, and returns how many
// it changed. This is a queue's visibility timeout (SQS's, River's rescuer,
// Oban's lifeline): a claim is a lease on its rows for timeout; a worker
// that dies, and a Claim whose outcome was unknown
// (ErrClaimOutcomeUnknown: its rows may be claimed and handed to no one),
// leave rows that Reclaim hands back to the queue. Claim stamps the column
// through set, with the workers' clock, as Reclaim compares with it:
//
//	running := clause.Eq{Column: clause.Column{Name: "state"}, Value: "running"}
//	jobs, err := lockplugin.Claim[Job](ctx, db, 10, queued,
//		map[string]any{"state": "running", "claimed_at": time.Now()})
//	...
//	// every minute or so, from any one process (running it twice is harmless):
//	n, err := lockplugin.Reclaim[Job](ctx, db, running, "claimed_at", 5*time.Minute,
//		map[string]any{"state": "queued"})
//
// where must select the claimed rows only (state = 'running'): finished
// jobs have an old claimed-at too. set typically restores the state where
// matches (and may count attempts, or move a job that failed too often to
// a dead state: put attempts < 5 in where). The timeout must exceed the
// longest time a job runs plus the clock skew between the workers: a
// worker still running a job past it shares the job with the next
// claimer, so a worker should either finish well within it, refresh its
// claimed-at while it works, or finish its job with an update guarded by
// the claimed-at it was given (WHERE id = ? AND claimed_at = ?) and drop
// the result when that matches no row. On SQLite, which compares times as
// text, stamp one time zone (time.Now().UTC()) everywhere.
//
// Reclaim is one UPDATE; its cut-off is computed once, so a re-sent
// statement re-queues no row claimed since. Values are bound; claimedAt
// and set's keys are columns of T (field or column names); soft-deleted
// rows are left alone unless db is Unscoped. Bad arguments are
// ErrInvalidClaim, and databases Claim cannot run on are ErrUnsupported,
// before any SQL.
func Reclaim[T any](ctx context.Context, db *gorm.DB, where clause.Expression, claimedAt string, timeout time.Duration, set map[string]any) (int64, error) {
	if db == nil || !plugin.Registered(db) {
		return 0, ErrNotRegistered
	}
	ctx, cancel := ctxjoin.Join(ctx, db)
	defer cancel()
	table, err := claimTable(db)
	if err != nil {
		return 0, err
	}
	if err := claimableStatement(db.Statement); err != nil {
		return 0, err
	}
	if where == nil {
		return 0, fmt.Errorf("%w: Reclaim needs a where that selects the claimed rows only (state = 'running', say): finished rows have an old claimed-at too", ErrInvalidClaim)
	}
	if timeout <= 0 {
		return 0, fmt.Errorf("%w: Reclaim's timeout is %v; it must exceed the longest job, so it cannot be 0 or negative", ErrInvalidClaim, timeout)
	}
	base := db.Session(&gorm.Session{Context: ctx})
	c, err := newClaim[T](base, table, 1, nil, set)
	if err != nil {
		return 0, err
	}
	f := c.sch.LookUpField(claimedAt)
	if f == nil || f.DBName == "" {
		return 0, fmt.Errorf("%w: %s has no column %q to hold the claim time", ErrInvalidClaim, c.sch.Name, claimedAt)
	}
	if err := validColumn(f.DBName); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	assign := make(map[string]any, len(c.cols))
	for i, col := range c.cols {
		assign[col.DBName] = c.values[i]
	}
	if w, ok := where.(clause.Where); ok {
		where = clause.And(w.Exprs...)
	}
	cutoff := time.Now().Add(-timeout).Round(0) // no monotonic reading: a wall-clock bound
	model := reflect.New(c.sch.ModelType).Interface()
	res := base.Table(c.tableName).Model(model).
		Where(where).
		Where(clause.Lt{Column: clause.Column{Name: f.DBName}, Value: cutoff}).
		UpdateColumns(assign)
	return res.RowsAffected, res.Error
}
