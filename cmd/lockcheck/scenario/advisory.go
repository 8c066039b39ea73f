package scenario

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/dialects"
)

// advCounter is the one-row counter of the advisory scenarios, in table
// cfg.Prefix+"_adv_counter".
type advCounter struct {
	ID int `gorm:"primaryKey;autoIncrement:false"`
	N  int
}

// AdvisoryCounter runs the scenario: Workers goroutines each do Rounds read-modify-write
// increments of one counter (a SELECT, then an UPDATE of what was read plus
// one), each inside advisory.With on the lock cfg.Prefix+"-adv-counter".
// No increment may be lost. On a database without advisory locks the
// result is Unsupported, with the reason.
func AdvisoryCounter(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return advisoryCounter(ctx, db, cfg, true)
}

// AdvisoryCounterUnprotected runs the same increments without the lock, the
// baseline that shows the increments AdvisoryCounter protects do get lost.
func AdvisoryCounterUnprotected(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	return advisoryCounter(ctx, db, cfg, false)
}

func advisoryCounter(ctx context.Context, db *gorm.DB, cfg Config, protect bool) (Result, error) {
	cfg = cfg.Defaults()
	res := Result{Scenario: "lost update / advisory lock", Expected: "0 lost updates"}
	if !protect {
		res = Result{Scenario: "lost update / no lock (read, then write)", Expected: "lost updates", Baseline: true}
	}
	if protect && !advisory.Supported(db) {
		res.Unsupported = dialects.Of(db).Require(dialects.AdvisoryLock).Error()
		return res, nil
	}
	table := cfg.Prefix + "_adv_counter"
	lockName := cfg.Prefix + "-adv-counter"
	setup := db.WithContext(ctx)
	if err := setup.Migrator().DropTable(table); err != nil {
		return res, fmt.Errorf("scenario: dropping %s: %w", table, err)
	}
	if err := setup.Table(table).Migrator().CreateTable(&advCounter{}); err != nil {
		return res, fmt.Errorf("scenario: creating %s: %w", table, err)
	}
	if err := setup.Table(table).Create(&advCounter{ID: 1}).Error; err != nil {
		return res, fmt.Errorf("scenario: seeding %s: %w", table, err)
	}

	increment := func(conn *gorm.DB) error {
		var c advCounter
		if err := conn.Table(table).Where("id = ?", 1).Take(&c).Error; err != nil {
			return err
		}
		return conn.Table(table).Where("id = ?", 1).Update("n", c.N+1).Error
	}
	errs, elapsed := Race(cfg.Workers, func(int) error {
		for r := 0; r < cfg.Rounds; r++ {
			var err error
			if protect {
				err = advisory.With(ctx, db, lockName, increment)
			} else {
				err = increment(db.WithContext(ctx))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	res.Elapsed = elapsed
	if err := FirstError(errs); err != nil {
		return res, err
	}
	var final advCounter
	if err := db.WithContext(ctx).Table(table).Where("id = ?", 1).Take(&final).Error; err != nil {
		return res, err
	}
	want := cfg.Workers * cfg.Rounds
	res.Ops = want
	res.Lost = want - final.N
	res.Observed = fmt.Sprintf("%d lost of %d", res.Lost, want)
	res.OK = res.Baseline || res.Lost == 0
	return res, nil
}
