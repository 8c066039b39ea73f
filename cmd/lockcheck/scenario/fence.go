package scenario

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/lease"
)

// fencedRow is the row FencedTakeover's holders write.
type fencedRow struct {
	ID uint
	N  int64
	lockplugin.Fence
}

// FencedTakeover runs the scenario: each worker, in each round, takes a lease, loses it
// behind its back (the store forgets it, as when its TTL runs out while
// the holder is paused: its handle still looks held), lets a second holder
// take it and write the row, and then writes the row itself. Fenced
// (lockplugin.WithFence), every stale write must fail with ErrStaleFence
// and none may land; unfenced (the baseline) they land. The table is
// cfg.Prefix+"_fenced"; db must have the plugin registered.
func FencedTakeover(ctx context.Context, db *gorm.DB, store lease.Store, cfg Config, fenced bool) (Result, error) {
	cfg = cfg.Defaults()
	title := "fenced writes / forced takeover"
	if !fenced {
		title = "fenced writes / forced takeover, unfenced"
	}
	res := Result{Scenario: title, Expected: "0 stale writes land", Baseline: !fenced}
	if !fenced {
		res.Expected = "nothing (baseline)"
	}
	table := cfg.Prefix + "_fenced"
	db = db.WithContext(ctx)
	if err := db.Migrator().DropTable(table); err != nil {
		return res, fmt.Errorf("scenario: dropping %s: %w", table, err)
	}
	if err := db.Table(table).AutoMigrate(&fencedRow{}); err != nil {
		return res, fmt.Errorf("scenario: creating %s: %w", table, err)
	}
	m := lease.NewManager(store)
	var landed, refused, writes atomic.Int64
	errs, elapsed := Race(cfg.Workers, func(w int) error {
		row := fencedRow{ID: uint(w + 1)}
		if err := db.Table(table).Create(&row).Error; err != nil {
			return err
		}
		name := fmt.Sprintf("%s-fence-%d", cfg.Prefix, w)
		for r := range cfg.Rounds {
			a, err := m.Acquire(ctx, name, lease.TTL(time.Minute), lease.WaitAtMost(time.Minute))
			if err != nil {
				return err
			}
			if _, err := store.Release(ctx, name, a.Owner()); err != nil { // the takeover
				return err
			}
			b, err := m.Acquire(ctx, name, lease.TTL(time.Minute), lease.WaitAtMost(time.Minute))
			if err != nil {
				return err
			}
			fresh := int64(2*r + 2)
			if err := db.WithContext(lockplugin.WithFence(ctx, b)).Table(table).Model(&fencedRow{ID: row.ID}).Update("n", fresh).Error; err != nil {
				return err
			}
			stale := fresh + 1
			adb := db
			if fenced {
				adb = db.WithContext(lockplugin.WithFence(ctx, a))
			}
			err = adb.Table(table).Model(&fencedRow{ID: row.ID}).Update("n", stale).Error
			writes.Add(1)
			switch {
			case errors.Is(err, lockplugin.ErrStaleFence):
				refused.Add(1)
			case err != nil:
				return err
			}
			var got fencedRow
			if err := db.Table(table).First(&got, row.ID).Error; err != nil {
				return err
			}
			if got.N == stale {
				landed.Add(1)
			}
			_ = a.Release(ctx) // lost: it was taken over
			if err := b.Release(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	res.Observed = fmt.Sprintf("%d of %d stale writes landed, %d refused with ErrStaleFence", landed.Load(), writes.Load(), refused.Load())
	res.Lost = int(landed.Load())
	res.Ops = int(writes.Load())
	res.Elapsed = elapsed
	res.OK = !fenced || (landed.Load() == 0 && refused.Load() == writes.Load())
	return res, FirstError(errs)
}

// ElectionExclusive runs the scenario: cfg.Workers candidates campaign cfg.Rounds times each
// on one election, lead briefly and resign. At most one may lead at any
// moment and every new term's number must exceed every earlier one's.
func ElectionExclusive(ctx context.Context, store lease.Store, cfg Config) (Result, error) {
	cfg = cfg.Defaults()
	res := Result{Scenario: "election / one leader", Expected: "0 overlapping leaders, terms strictly increasing"}
	name := cfg.Prefix + "-election"
	var leaders, overlaps, terms, notIncreasing, last atomic.Int64
	errs, elapsed := Race(cfg.Workers, func(int) error {
		e, err := election.New(store, name, election.PollInterval(5*time.Millisecond))
		if err != nil {
			return err
		}
		for range cfg.Rounds {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			t, err := e.Campaign(cctx)
			cancel()
			if err != nil {
				return err
			}
			if leaders.Add(1) > 1 {
				overlaps.Add(1)
			}
			if prev := last.Swap(t.Number()); t.Number() <= prev {
				notIncreasing.Add(1)
			}
			terms.Add(1)
			time.Sleep(100 * time.Microsecond) // lead
			leaders.Add(-1)
			if err := t.Resign(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	res.Observed = fmt.Sprintf("%d terms, %d overlapping leaders, %d terms not above the previous", terms.Load(), overlaps.Load(), notIncreasing.Load())
	res.Lost = int(overlaps.Load() + notIncreasing.Load())
	res.Ops = int(terms.Load())
	res.Elapsed = elapsed
	res.OK = overlaps.Load() == 0 && notIncreasing.Load() == 0 && terms.Load() == int64(cfg.Workers*cfg.Rounds)
	return res, FirstError(errs)
}
