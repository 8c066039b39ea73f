package scenario

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/holds"
)

// capacitySeat is the resource CapacityRace races for. Its table is named
// per run with db.Table, so the model has no TableName.
type capacitySeat struct {
	ID       uint
	Capacity int
}

// HoldCapacity implements holds.Holdable.
func (s capacitySeat) HoldCapacity() int { return s.Capacity }

// CapacityRace runs the scenario: Rounds races of Workers acquirers for a capacity-1
// resource; never more than one hold. Its tables are Prefix+"_seats" (the
// resources, one per round) and Prefix+"_holds" (the holds table), both
// dropped and created afresh. Lost counts the oversold slots: holds granted
// beyond the capacity, as counted both by the acquirers and in the table.
// Ops counts the acquisitions answered (a hold or "full"), Workers per
// round, so that OpsPerSecond is the rate of Acquire calls.
func CapacityRace(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	cfg = cfg.Defaults()
	res := Result{
		Scenario: "capacity race / holds.Acquire",
		Expected: fmt.Sprintf("1 hold per round, %d acquirers each", cfg.Workers),
	}
	if err := dialects.Of(db).Require(dialects.CapacityHolds); err != nil {
		res.Unsupported = err.Error()
		return res, nil
	}
	db = db.WithContext(ctx)
	seats, holdsTable := cfg.Prefix+"_seats", cfg.Prefix+"_holds"
	table := holds.Table(holdsTable)
	m := db.Migrator()
	for _, t := range []string{seats, holdsTable} {
		if err := m.DropTable(t); err != nil {
			return res, fmt.Errorf("scenario: dropping %s: %w", t, err)
		}
	}
	if err := db.Table(seats).AutoMigrate(&capacitySeat{}); err != nil {
		return res, fmt.Errorf("scenario: creating %s: %w", seats, err)
	}
	if err := holds.Migrate(db, table); err != nil {
		return res, err
	}
	holdsGranted := 0
	for round := 0; round < cfg.Rounds; round++ {
		seat := capacitySeat{Capacity: 1}
		if err := db.Table(seats).Create(&seat).Error; err != nil {
			return res, fmt.Errorf("scenario: creating a seat: %w", err)
		}
		var granted atomic.Int64
		errs, elapsed := Race(cfg.Workers, func(w int) error {
			h, err := holds.Acquire(ctx, db.Table(seats), &seat, fmt.Sprintf("worker:%d", w), table)
			if h != nil {
				granted.Add(1)
			}
			if errors.Is(err, holds.ErrFull) {
				return nil // the ordinary answer of the losers
			}
			return err
		})
		res.Elapsed += elapsed
		if err := FirstError(errs); err != nil {
			return res, err
		}
		var rows int64
		if err := db.Table(holdsTable).Where("resource_type = ? AND resource_id = ?", seats, fmt.Sprint(seat.ID)).Count(&rows).Error; err != nil {
			return res, fmt.Errorf("scenario: counting holds: %w", err)
		}
		if granted.Load() == 0 {
			return res, fmt.Errorf("scenario: round %d: %d acquirers and no hold granted", round, cfg.Workers)
		}
		got := max(granted.Load(), rows)
		holdsGranted += int(granted.Load())
		res.Ops += cfg.Workers
		if got > 1 {
			res.Lost += int(got - 1)
		}
	}
	res.OK = res.Lost == 0
	res.Observed = fmt.Sprintf("%d oversold in %d rounds (%d holds granted)", res.Lost, cfg.Rounds, holdsGranted)
	return res, nil
}
