package scenario

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
)

// versionCounter is the row LostUpdateVersion increments.
type versionCounter struct {
	ID uint
	N  int
	lockplugin.Version
}

// LostUpdateVersion runs the same increments through a versioned model and
// lockplugin.RetryOnConflict. Each increment reads the counter and saves it
// back in a transaction; a stale save fails with ErrConcurrency and is run
// again from a fresh read. The table is cfg.Prefix+"_vcounters"; db must
// have the plugin registered and must not be inside a transaction.
func LostUpdateVersion(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	cfg = cfg.Defaults()
	res := Result{Scenario: "lost update / version + RetryOnConflict", Expected: "0 lost updates"}
	table := cfg.Prefix + "_vcounters"
	db = db.WithContext(ctx)
	m := db.Migrator()
	if err := m.DropTable(table); err != nil {
		return res, fmt.Errorf("scenario: dropping %s: %w", table, err)
	}
	if err := db.Table(table).AutoMigrate(&versionCounter{}); err != nil {
		return res, fmt.Errorf("scenario: creating %s: %w", table, err)
	}
	c := versionCounter{}
	if err := db.Table(table).Create(&c).Error; err != nil {
		return res, fmt.Errorf("scenario: creating the counter: %w", err)
	}

	// Every conflict means somebody else's increment landed, so no
	// increment can lose more often than there are increments in all: a
	// worker starved by a loaded machine still finishes, and a bound that
	// is hit means the guard is broken, not that the box was slow.
	attempts := cfg.Workers*cfg.Rounds + 1
	var ops, runs, conflicts atomic.Int64
	errs, elapsed := Race(cfg.Workers, func(int) error {
		for i := 0; i < cfg.Rounds; i++ {
			err := lockplugin.RetryOnConflict(ctx, db, attempts, func(tx *gorm.DB) error {
				runs.Add(1)
				var cur versionCounter
				if err := tx.Table(table).First(&cur, c.ID).Error; err != nil {
					return err
				}
				cur.N++
				err := tx.Table(table).Save(&cur).Error
				if errors.Is(err, lockplugin.ErrConcurrency) {
					conflicts.Add(1)
				}
				return err
			})
			if err != nil {
				return err
			}
			ops.Add(1)
		}
		return nil
	})
	res.Elapsed = elapsed
	res.Ops = int(ops.Load())

	var final versionCounter
	if err := db.Table(table).First(&final, c.ID).Error; err != nil {
		return res, fmt.Errorf("scenario: reading the counter: %w", err)
	}
	want := cfg.Workers * cfg.Rounds
	res.Lost = res.Ops - final.N
	res.Observed = fmt.Sprintf("%d lost of %d; %d retries, %d on version conflicts",
		res.Lost, want, runs.Load()-ops.Load(), conflicts.Load())
	err := FirstError(errs)
	res.OK = err == nil && res.Lost == 0 && final.N == want
	return res, err
}
