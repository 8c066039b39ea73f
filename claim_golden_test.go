package lockplugin_test

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/dryrun"
	"github.com/lockplugin/lockplugin/internal/goldenfile"
	"github.com/lockplugin/lockplugin/observe"
)

// billingJob is a claimJob in a table of schema billing.
type billingJob claimJob

func (billingJob) TableName() string { return "billing.jobs" }

// goldenClaimDB is claimDB for the golden test: the stand-in dialector of
// d over a recorder answering twoRows, with lockplugin registered with
// opts.
func goldenClaimDB(t *testing.T, d dialects.Dialect, opts ...lockplugin.Option) (*gorm.DB, *recorder) {
	t.Helper()
	rec := &recorder{rows: twoRows}
	pool := sql.OpenDB(rec)
	t.Cleanup(func() { _ = pool.Close() })
	db, err := gorm.Open(&dryrun.Dialector{DialectorName: d.Dialector, ServerVersion: d.Version}, &gorm.Config{
		ConnPool: pool, SkipDefaultTransaction: true, DisableAutomaticPing: true, Logger: logger.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.Version == "" {
		// What a server would answer to the version query dialects.Of
		// sends (PostgreSQL asks); the recorder answers only the
		// statements under test.
		dialects.AssumeServerVersion(db, "PostgreSQL 16.4")
		t.Cleanup(func() { dialects.Forget(db) })
	}
	if err := db.Use(lockplugin.New(opts...)); err != nil {
		t.Fatal(err)
	}
	return db, rec
}

// cutoffValue is Reclaim's cut-off as the recorder prints it: a time that
// changes with every run.
var cutoffValue = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? [+-]\d{4} [^\s\]]+`)

// TestClaimGolden renders every statement Claim and Reclaim send, and the
// index advice and catalog read of Claim's index check, on every database,
// into internal/drivers/<db>/testdata/claim.golden: the statements as the
// database receives them, in order (transaction statements included),
// with their bound values in brackets.
func TestClaimGolden(t *testing.T) {
	type softJob struct {
		ID        int64
		State     string
		Worker    int
		Attempts  int
		DeletedAt gorm.DeletedAt
	}
	ctx := context.Background()
	observer := lockplugin.WithObserver(observe.Func(func(observe.Event) {}))
	goldenfile.Check(t, "claim", func(d dialects.Dialect, p *goldenfile.Page) {
		if !d.Supports(dialects.QueueClaim) {
			return // refused before any SQL (TestClaimRefused)
		}
		var fail func(stmt string) error // the recorder's, for the next record
		record := func(name string, run func(db *gorm.DB) error, opts ...lockplugin.Option) {
			t.Helper()
			db, rec := goldenClaimDB(t, d, opts...)
			rec.fail, fail = fail, nil
			if err := run(db); err != nil {
				t.Errorf("%s on %s: %v", name, d, err)
			}
			p.Add(name, cutoffValue.ReplaceAllString(strings.Join(rec.statements(), "\n"), "<cut-off>"))
		}
		claim := func(n int, where clause.Expression, set map[string]any) func(db *gorm.DB) error {
			return func(db *gorm.DB) error {
				_, err := lockplugin.Claim[claimJob](ctx, db, n, where, set)
				return err
			}
		}
		record("claim 10, plain values", claim(10, queued, setPlain))
		record("claim 10, an expression in set", claim(10, queued, setExpr))
		record("claim 1, no condition", claim(1, nil, setPlain))
		record("claim 3, two conditions", claim(3, clause.And(queued, clause.Lte{Column: clause.Column{Name: "attempts"}, Value: 5}), setPlain))
		record("claim 10 from a schema-qualified table, with an Observer: the index check's catalog read, then the claim", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[billingJob](ctx, db, 10, queued, setPlain)
			return err
		}, observer)
		record("claim 10, db.Table", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](ctx, db.Table("jobs_eu"), 10, queued, setPlain)
			return err
		})
		record("claim 10, soft delete", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[softJob](ctx, db, 10, queued, setPlain)
			return err
		})
		record("claim 10, soft delete, Unscoped", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[softJob](ctx, db.Unscoped(), 10, queued, setPlain)
			return err
		})
		record("claim 10 inside the caller's transaction", func(db *gorm.DB) error {
			return db.Transaction(func(tx *gorm.DB) error {
				_, err := lockplugin.Claim[claimJob](ctx, tx, 10, queued, setExpr)
				return err
			})
		})
		record("claim 10 with an Observer: the index check's catalog read, then the claim", claim(10, queued, setPlain), observer)
		failed := false
		fail = func(stmt string) error {
			if !failed && stmt != "COMMIT" {
				failed = true
				return dialects.ErrLockNotAvailable
			}
			return nil
		}
		record("claim 10 whose first statement times out waiting for a lock (retried where the claim is a transaction of its own)", func(db *gorm.DB) error {
			_, err := lockplugin.Claim[claimJob](ctx, db, 10, queued, setPlain)
			if err != nil && errors.Is(err, dialects.ErrLockNotAvailable) {
				return nil // not retried: the statement's own answer
			}
			return err
		})
		record("reclaim after 1 minute", func(db *gorm.DB) error {
			running := clause.Eq{Column: clause.Column{Name: "state"}, Value: "running"}
			_, err := lockplugin.Reclaim[stampedJob](ctx, db, running, "ClaimedAt", time.Minute, map[string]any{"state": "queued"})
			return err
		})
		p.Add("index advice", lockplugin.ClaimIndexAdvice(d.Kind, "billing.jobs", "state", "id"))
	})
}
