package holds

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// PurgeBatch is how many hold rows one DELETE of Purge removes at most:
// small enough that each statement holds its row locks (and, on SQLite, the
// database's writer lock) for milliseconds, so that Acquire and Release
// keep running between batches.
const PurgeBatch = 500

// Purge deletes the holds of the holds table (DefaultTable, or the one
// named with Table) that ended more than olderThan ago by the database
// clock: released ones whose released_at is older, and ones that expired
// without a Release whose expires_at is older. It never deletes an active
// hold: a hold that ended before now - olderThan cannot be active, and a
// hold that Extend or Release changes meanwhile is judged again as changed.
// It deletes in batches of PurgeBatch rows, one statement each, until a
// batch finds fewer, and returns how many it deleted. It stops when ctx
// ends, returning what it deleted so far with the context's error. A
// negative olderThan is refused with ErrInvalid before anything is sent.
//
// Nothing purges by default: the holds table keeps its history (when each
// hold was granted, released or expired) until the application decides how
// long it wants it, and Acquire's cost does not grow with that history (the
// count skips ended holds by the index). Run Purge periodically, from a
// cron job or a ticker in one process, with a cutoff longer than both the
// history wanted and the longest a holder may keep a Hold handle after it
// ended: Release or Extend of a purged hold answers ErrNotFound instead of
// ErrLost, and with an Observer set, a hold that expired unreleased and was
// purged before any read met it is never reported HoldExpired.
// `lockcheck doctor` reports a backlog of ended holds.
//
// The scan for ended holds is not bounded by the index (it leads with the
// resource): each batch reads the table in id order until it has found
// PurgeBatch ended holds, so the first run on a large history is the
// slowest, and later runs are short.
func Purge(ctx context.Context, db *gorm.DB, olderThan time.Duration, opts ...Option) (int64, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("%w: holds.Purge(%v): a negative age", ErrInvalid, olderThan)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return 0, err
	}
	c, err := begin(ctx, db, cfg.table)
	if err != nil {
		return 0, err
	}
	defer c.done()
	q := bind(c.st.dr, c.st.purge(PurgeBatch))
	age := olderThan.Milliseconds()
	args := []any{age, age}
	if c.st.purgeRepeats() {
		args = append(args, age, age)
	}
	r := c.runner(c.pool)
	var total int64
	for {
		n, err := r.exec(c.ctx, q, args...)
		total += n
		if err != nil {
			return total, fmt.Errorf("holds: purging holds ended before %v ago from %s on %s (%d deleted): %w", olderThan, cfg.table, c.d, total, ctxError(c.ctx, err))
		}
		if n < PurgeBatch {
			return total, nil
		}
		if err := ended(c.ctx, db); err != nil {
			return total, fmt.Errorf("holds: purging %s on %s (%d deleted): %w", cfg.table, c.d, total, err)
		}
	}
}

// endedBefore is the condition for a hold that ended before the cutoff, the
// database clock less the bound age in milliseconds; its two placeholders
// take the age. The cutoff is never later than now, so an ended hold
// cannot be active.
func (s statements) endedBefore() string {
	cut := "(" + s.clock() + " - ?)"
	return "(released_at < " + cut + " OR (released_at IS NULL AND expires_at < " + cut + "))"
}

// purgeRepeats reports whether purge binds the age four times (the
// condition is repeated outside the batch's subquery) rather than twice.
func (s statements) purgeRepeats() bool {
	_, repeats := s.h.Purge(s.t, s.endedBefore(), PurgeBatch)
	return repeats
}

// purge deletes up to n ended holds, oldest ids first: DELETE ... LIMIT,
// DELETE TOP, or, where neither will do, the batch's ids picked in a
// subquery and the condition repeated outside it (the family says which).
func (s statements) purge(n int) string {
	q, _ := s.h.Purge(s.t, s.endedBefore(), n)
	return q
}
