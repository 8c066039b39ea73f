package scenario

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
)

// lostUpdateRow is the one-row counter of the lost-update scenarios.
type lostUpdateRow struct {
	ID int64 `gorm:"primaryKey;autoIncrement:false"`
	N  int64 `gorm:"not null"`
}

const lostUpdateRowID = 1

// resetLostUpdateTable (re)creates cfg.Prefix+"_counters" holding one
// counter at 0 and returns the table name.
func resetLostUpdateTable(ctx context.Context, db *gorm.DB, cfg Config) (string, error) {
	table := cfg.Prefix + "_counters"
	db = db.WithContext(ctx)
	if err := db.Migrator().DropTable(table); err != nil {
		return "", fmt.Errorf("scenario: dropping %s: %w", table, err)
	}
	if err := db.Table(table).Migrator().CreateTable(&lostUpdateRow{}); err != nil {
		return "", fmt.Errorf("scenario: creating %s: %w", table, err)
	}
	if err := db.Table(table).Create(&lostUpdateRow{ID: lostUpdateRowID}).Error; err != nil {
		return "", fmt.Errorf("scenario: seeding %s: %w", table, err)
	}
	return table, nil
}

// finishLostUpdate reads the counter and fills in the result.
func finishLostUpdate(ctx context.Context, db *gorm.DB, table string, r Result, cfg Config, errs []error) (Result, error) {
	if err := firstCause(errs); err != nil {
		return r, err
	}
	var row lostUpdateRow
	if err := db.WithContext(ctx).Table(table).Take(&row, lostUpdateRowID).Error; err != nil {
		return r, fmt.Errorf("scenario: reading %s: %w", table, err)
	}
	want := int64(cfg.Workers * cfg.Rounds)
	r.Ops = cfg.Workers * cfg.Rounds
	r.Lost = int(want - row.N)
	r.Observed = fmt.Sprintf("%d lost of %d (counter %d)", r.Lost, want, row.N)
	r.OK = r.Baseline || r.Lost == 0
	return r, nil
}

// LostUpdateUnprotected runs the scenario: Workers goroutines each do Rounds read-modify-write
// increments of one counter with plain GORM and no lock. Baseline.
//
// Every round, all workers read, wait for each other, then write what they
// read plus one: the race that real traffic hits now and then, made to
// happen every time, so each round loses Workers-1 increments wherever the
// database lets readers and writers pass each other.
func LostUpdateUnprotected(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	cfg = cfg.Defaults()
	r := Result{Scenario: "lost update / no protection", Expected: "updates get lost", Baseline: true}
	table, err := resetLostUpdateTable(ctx, db, cfg)
	if err != nil {
		return r, err
	}
	db = db.WithContext(ctx)
	between := newRoundBarrier(cfg.Workers)
	errs, elapsed := Race(cfg.Workers, func(int) error {
		for i := 0; i < cfg.Rounds; i++ {
			var row lostUpdateRow
			err := db.Table(table).Take(&row, lostUpdateRowID).Error
			// Wait even after an error, so that the others are not
			// left waiting for this worker.
			if berr := between.wait(ctx); berr != nil && err == nil {
				err = berr
			}
			if err != nil {
				between.abort()
				return err
			}
			if err := db.Table(table).Where("id = ?", lostUpdateRowID).Update("n", row.N+1).Error; err != nil {
				between.abort()
				return err
			}
		}
		return nil
	})
	r.Elapsed = elapsed
	return finishLostUpdate(ctx, db, table, r, cfg, errs)
}

// LostUpdateForUpdate runs the same increments, each reading with FOR UPDATE in
// a transaction.
func LostUpdateForUpdate(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	cfg = cfg.Defaults()
	r := Result{Scenario: "lost update / FOR UPDATE", Expected: "0 lost updates"}
	table, err := resetLostUpdateTable(ctx, db, cfg)
	if err != nil {
		return r, err
	}
	// The plugin decides: SQLite refuses FOR UPDATE unless it was
	// registered with lockplugin.SQLiteWriterLock.
	if err := probeLock(ctx, db, table, lockplugin.ForUpdate()); err != nil {
		r.Unsupported = err.Error()
		return r, nil
	}
	db = db.WithContext(ctx)
	errs, elapsed := Race(cfg.Workers, func(int) error {
		for i := 0; i < cfg.Rounds; i++ {
			err := db.Transaction(func(tx *gorm.DB) error {
				var row lostUpdateRow
				if err := tx.Clauses(lockplugin.ForUpdate()).Table(table).Where("id = ?", lostUpdateRowID).Take(&row).Error; err != nil {
					return err
				}
				return tx.Table(table).Where("id = ?", lostUpdateRowID).Update("n", row.N+1).Error
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	r.Elapsed = elapsed
	return finishLostUpdate(ctx, db, table, r, cfg, errs)
}

// LostUpdateExpr runs the same increments as one database-computed UPDATE
// (gorm.Expr("n + 1")).
func LostUpdateExpr(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	cfg = cfg.Defaults()
	r := Result{Scenario: "lost update / UPDATE n = n + 1", Expected: "0 lost updates"}
	table, err := resetLostUpdateTable(ctx, db, cfg)
	if err != nil {
		return r, err
	}
	db = db.WithContext(ctx)
	errs, elapsed := Race(cfg.Workers, func(int) error {
		for i := 0; i < cfg.Rounds; i++ {
			if err := db.Table(table).Where("id = ?", lostUpdateRowID).Update("n", gorm.Expr("n + ?", 1)).Error; err != nil {
				return err
			}
		}
		return nil
	})
	r.Elapsed = elapsed
	return finishLostUpdate(ctx, db, table, r, cfg, errs)
}

// errBarrierAborted is returned by roundBarrier.wait after a worker gave up.
var errBarrierAborted = errors.New("scenario: another worker failed")

// firstCause returns the first error of errs that is not a worker giving
// up because another one failed.
func firstCause(errs []error) error {
	for _, e := range errs {
		if e != nil && !errors.Is(e, errBarrierAborted) {
			return e
		}
	}
	return FirstError(errs)
}

// roundBarrier is a reusable barrier: wait returns once all n parties have
// called it, round after round.
type roundBarrier struct {
	mu      sync.Mutex
	n       int
	waiting int
	release chan struct{}
	aborted bool
}

func newRoundBarrier(n int) *roundBarrier {
	return &roundBarrier{n: n, release: make(chan struct{})}
}

func (b *roundBarrier) wait(ctx context.Context) error {
	b.mu.Lock()
	if b.aborted {
		b.mu.Unlock()
		return errBarrierAborted
	}
	ch := b.release
	b.waiting++
	if b.waiting == b.n {
		b.waiting = 0
		b.release = make(chan struct{})
		close(ch)
		b.mu.Unlock()
		return nil
	}
	b.mu.Unlock()
	select {
	case <-ch:
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.aborted {
			return errBarrierAborted
		}
		return nil
	case <-ctx.Done():
		b.abort()
		return ctx.Err()
	case <-time.After(2 * time.Minute):
		b.abort()
		return errors.New("scenario: barrier timed out")
	}
}

// abort releases everyone waiting now and later with errBarrierAborted.
func (b *roundBarrier) abort() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.aborted {
		b.aborted = true
		close(b.release)
	}
}

// probeLock returns the ErrUnsupported error that lock gets on table
// inside a transaction, or nil when the plugin takes it. The transaction is
// rolled back.
func probeLock(ctx context.Context, db *gorm.DB, table string, lock clause.Expression) error {
	var unsupported error
	_ = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var rows []map[string]any
		if err := tx.Clauses(lock).Table(table).Limit(1).Find(&rows).Error; errors.Is(err, lockplugin.ErrUnsupported) {
			unsupported = err
		}
		return errRollback
	})
	return unsupported
}

// errRollback rolls a probe's transaction back.
var errRollback = errors.New("scenario: rollback")
