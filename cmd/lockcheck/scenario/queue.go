package scenario

import (
	"context"
	"fmt"
	"github.com/lockplugin/lockplugin/internal/drivers"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
)

// queueBatch is how many jobs a worker claims at a time.
const queueBatch = 10

// queueJob is one row of the work-queue scenario's table.
type queueJob struct {
	ID     int64  `gorm:"primaryKey;autoIncrement:false"`
	State  string `gorm:"size:16;not null"`
	Worker int    `gorm:"not null"`
	Claims int    `gorm:"not null"`
}

// resetQueueTable (re)creates cfg.Prefix+"_jobs" holding n queued jobs and
// returns the table name.
func resetQueueTable(ctx context.Context, db *gorm.DB, cfg Config, n int) (string, error) {
	table := cfg.Prefix + "_jobs"
	db = db.WithContext(ctx)
	if err := db.Migrator().DropTable(table); err != nil {
		return "", fmt.Errorf("scenario: dropping %s: %w", table, err)
	}
	if err := db.Table(table).Migrator().CreateTable(&queueJob{}); err != nil {
		return "", fmt.Errorf("scenario: creating %s: %w", table, err)
	}
	// The claim reads queued jobs in id order; without this index InnoDB
	// would scan (and lock) every job already claimed.
	d := dialects.Of(db)
	idx := drivers.For(d).QuoteIdent(table + "_state_id")
	if err := db.Exec("CREATE INDEX " + idx + " ON " + drivers.For(d).QuoteIdent(table) + " (state, id)").Error; err != nil {
		return "", fmt.Errorf("scenario: indexing %s: %w", table, err)
	}
	jobs := make([]queueJob, n)
	for i := range jobs {
		jobs[i] = queueJob{ID: int64(i + 1), State: "queued"}
	}
	if err := db.Table(table).CreateInBatches(&jobs, 400).Error; err != nil {
		return "", fmt.Errorf("scenario: seeding %s: %w", table, err)
	}
	return table, nil
}

// SkipLockedQueue runs the scenario: Workers goroutines claim Workers*Rounds*10 jobs in
// batches of 10 with FOR UPDATE SKIP LOCKED; every job must be claimed once.
//
// A claim is one transaction: lock up to 10 queued jobs, skipping those
// other workers hold, mark them running, commit. Lost counts the jobs that
// were claimed twice or never.
func SkipLockedQueue(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	cfg = cfg.Defaults()
	total := cfg.Workers * cfg.Rounds * queueBatch
	r := Result{Scenario: "work queue / SKIP LOCKED", Expected: fmt.Sprintf("each of %d jobs claimed exactly once", total)}
	table, err := resetQueueTable(ctx, db, cfg, total)
	if err != nil {
		return r, err
	}
	// The plugin decides: SQLite refuses the lock unless it was
	// registered with lockplugin.SQLiteWriterLock.
	if err := probeLock(ctx, db, table, lockplugin.ForUpdate(lockplugin.SkipLocked)); err != nil {
		r.Unsupported = err.Error()
		return r, nil
	}
	db = db.WithContext(ctx)

	claimed := make([][]int64, cfg.Workers)
	retries := make([]int, cfg.Workers)
	errs, elapsed := Race(cfg.Workers, func(w int) error {
		for {
			var ids []int64
			err := db.Transaction(func(tx *gorm.DB) error {
				ids = ids[:0]
				var jobs []queueJob
				err := tx.Clauses(lockplugin.ForUpdate(lockplugin.SkipLocked)).
					Table(table).Where("state = ?", "queued").Order("id").Limit(queueBatch).
					Find(&jobs).Error
				if err != nil || len(jobs) == 0 {
					return err
				}
				for _, j := range jobs {
					ids = append(ids, j.ID)
				}
				return markClaimed(tx, table, ids, w)
			})
			switch {
			case err != nil && dialects.IsRetryable(err):
				retries[w]++
				continue
			case err != nil:
				return err
			case len(ids) > 0:
				claimed[w] = append(claimed[w], ids...)
				continue
			}
			// Nothing unlocked was left. Jobs still queued are held by
			// workers that will commit them, or were released by a
			// rolled-back claim and are up for grabs again.
			var left int64
			if err := db.Table(table).Where("state = ?", "queued").Count(&left).Error; err != nil {
				return err
			}
			if left == 0 {
				return nil
			}
		}
	})
	r.Elapsed = elapsed
	if err := FirstError(errs); err != nil {
		return r, err
	}
	sum := 0
	for _, n := range retries {
		sum += n
	}
	return finishQueue(ctx, db, table, total, claimed, fmt.Sprintf("; %d retried claims", sum), r)
}

// QueueUnprotected is SkipLockedQueue's baseline: the same claims read
// with a plain SELECT, no lock. Every round, all workers read, wait for each
// other, then mark what they read, so every batch is claimed by every
// worker: the double work that SKIP LOCKED prevents. Since every round
// hands one batch to all workers, the queue holds Rounds batches (not
// Workers*Rounds as SkipLockedQueue's does): the same number of rounds.
func QueueUnprotected(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	cfg = cfg.Defaults()
	total := cfg.Rounds * queueBatch
	r := Result{Scenario: "work queue / no lock", Expected: "jobs get claimed more than once", Baseline: true}
	table, err := resetQueueTable(ctx, db, cfg, total)
	if err != nil {
		return r, err
	}
	db = db.WithContext(ctx)

	claimed := make([][]int64, cfg.Workers)
	afterRead, afterWrite := newRoundBarrier(cfg.Workers), newRoundBarrier(cfg.Workers)
	errs, elapsed := Race(cfg.Workers, func(w int) error {
		for {
			var jobs []queueJob
			err := db.Table(table).Where("state = ?", "queued").Order("id").Limit(queueBatch).Find(&jobs).Error
			if err == nil {
				err = afterRead.wait(ctx)
			}
			if err != nil {
				afterRead.abort()
				afterWrite.abort()
				return err
			}
			if len(jobs) == 0 {
				// Every worker read the same (empty) batch, after the
				// same writes: they all stop in this round.
				return nil
			}
			ids := make([]int64, len(jobs))
			for i, j := range jobs {
				ids[i] = j.ID
			}
			// One autocommit statement per row, in id order: updating the
			// whole batch in one statement lets two workers lock the same
			// rows in different orders and deadlock, which would hide the
			// double claims this baseline is here to show.
			for _, id := range ids {
				if err = markClaimed(db, table, []int64{id}, w); err != nil {
					break
				}
			}
			if err == nil {
				err = afterWrite.wait(ctx)
			}
			if err != nil {
				afterRead.abort()
				afterWrite.abort()
				return err
			}
			claimed[w] = append(claimed[w], ids...)
		}
	})
	r.Elapsed = elapsed
	if err := firstCause(errs); err != nil {
		return r, err
	}
	return finishQueue(ctx, db, table, total, claimed, "", r)
}

// markClaimed marks jobs ids running for worker w, counting the claim.
func markClaimed(db *gorm.DB, table string, ids []int64, w int) error {
	return db.Table(table).Where("id IN ?", ids).Updates(map[string]any{
		"state": "running", "worker": w, "claims": gorm.Expr("claims + 1"),
	}).Error
}

// finishQueue checks that every job was claimed exactly once, by the
// workers' own records and by the table, and fills in the result.
func finishQueue(ctx context.Context, db *gorm.DB, table string, total int, claimed [][]int64, note string, r Result) (Result, error) {
	times := make(map[int64]int, total)
	for _, ids := range claimed {
		for _, id := range ids {
			times[id]++
			r.Ops++
		}
	}
	twice, never := 0, 0
	for id := int64(1); id <= int64(total); id++ {
		switch c := times[id]; {
		case c == 0:
			never++
		case c > 1:
			twice += c - 1
		}
	}
	var badRows int64
	if err := db.WithContext(ctx).Table(table).Where("claims <> ? OR state <> ?", 1, "running").Count(&badRows).Error; err != nil {
		return r, err
	}
	r.Lost = twice + never
	if int(badRows) > r.Lost {
		r.Lost = int(badRows)
	}
	r.Observed = fmt.Sprintf("%d claims of %d jobs: %d extra claims, %d never claimed, %d rows not claimed exactly once%s",
		r.Ops, total, twice, never, badRows, note)
	r.OK = r.Baseline || r.Lost == 0
	return r, nil
}

// ClaimQueue runs the scenario: Workers goroutines claim Workers*Rounds*10 jobs with
// lockplugin.Claim, 10 at a time; every job must be claimed exactly once,
// and every claimed row must come back as the claim left it (running, by
// this worker, claimed once).
func ClaimQueue(ctx context.Context, db *gorm.DB, cfg Config) (Result, error) {
	cfg = cfg.Defaults()
	total := cfg.Workers * cfg.Rounds * queueBatch
	r := Result{Scenario: "work queue / lockplugin.Claim", Expected: fmt.Sprintf("each of %d jobs claimed exactly once", total)}
	if err := dialects.Of(db).Require(dialects.QueueClaim); err != nil {
		r.Unsupported = err.Error()
		return r, nil
	}
	table, err := resetQueueTable(ctx, db, cfg, total)
	if err != nil {
		return r, err
	}
	db = db.WithContext(ctx)
	queued := clause.Eq{Column: clause.Column{Name: "state"}, Value: "queued"}

	claimed := make([][]int64, cfg.Workers)
	retries := make([]int, cfg.Workers)
	stale := make([]int, cfg.Workers)
	errs, elapsed := Race(cfg.Workers, func(w int) error {
		for {
			jobs, err := lockplugin.Claim[queueJob](ctx, db.Table(table), queueBatch, queued,
				map[string]any{"state": "running", "worker": w, "claims": gorm.Expr("claims + 1")})
			switch {
			case err != nil && dialects.IsRetryable(err):
				retries[w]++
				continue
			case err != nil:
				return err
			case len(jobs) > 0:
				for _, j := range jobs {
					if j.State != "running" || j.Worker != w || j.Claims < 1 {
						stale[w]++
					}
					claimed[w] = append(claimed[w], j.ID)
				}
				continue
			}
			var left int64
			if err := db.Table(table).Where("state = ?", "queued").Count(&left).Error; err != nil {
				return err
			}
			if left == 0 {
				return nil
			}
		}
	})
	r.Elapsed = elapsed
	if err := FirstError(errs); err != nil {
		return r, err
	}
	retried, wrong := 0, 0
	for w := range retries {
		retried += retries[w]
		wrong += stale[w]
	}
	r, err = finishQueue(ctx, db, table, total, claimed, fmt.Sprintf("; %d retried claims; %d rows returned not as claimed", retried, wrong), r)
	r.Lost += wrong
	r.OK = r.Lost == 0
	return r, err
}
