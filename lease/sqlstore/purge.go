package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PurgeBatch is how many rows one batch of Purge (and of the automatic
// retention) removes at most: small enough that each statement holds its
// row locks (and, on SQLite, the database's writer lock) for milliseconds,
// so that Acquire, Refresh and Release keep running between batches. On
// MySQL and MariaDB a batch is a read of up to PurgeBatch names that
// takes no row lock, then the DELETE of those names (500 a statement).
const PurgeBatch = 1000

// PurgeMinAge is the youngest a row may be, since its name was last
// granted, for Purge and the automatic retention to delete it: an age
// under it counts as PurgeMinAge. An acquire reads the database clock for
// a new row's fence before it writes the row (MySQL, MariaDB and SQL
// Server at the start of the statement, which then may wait for the
// purge's row lock; PostgreSQL before the insert meets the index), so a
// row deleted moments after its last grant could be recreated with a
// fence read before the deletion: measured with Purge(0) in a loop under
// 12 workers on 4 names, 1 fence of 180 went backwards on PostgreSQL in
// 2 of 4 runs and on MariaDB in 1 of 3. The minute is far above such
// lags (a statement descheduled, or waiting behind a row lock for the
// short statements of the store; MySQL and MariaDB give up a lock wait
// after 50 s by default). An acquire whose statement waits longer than
// that and then inserts could still go backwards.
const PurgeMinAge = time.Minute

// DefaultRetention is how long the row of a name whose lease is over
// stays in the table unless Retention says otherwise.
const DefaultRetention = 24 * time.Hour

// purgeInterval is how often a Store runs one batch of its automatic
// retention at most, and purgeTimeout how long one batch may take.
const (
	purgeInterval = time.Minute
	purgeTimeout  = 10 * time.Second
)

// Retention sets how long the row of a name whose lease is over (released
// or expired) stays in the table after the name was last granted (default
// DefaultRetention, 24 hours). The store removes older rows by itself: at
// most once a minute, after an Acquire, in the background, one batch of
// PurgeBatch rows (bounded by 10 seconds; no goroutine is left when none
// runs), so the table holds the live leases and the names granted within
// the retention. 0 keeps the default; a negative value turns the automatic
// removal off (Purge still works), and the table keeps one row per name
// ever taken, as before. A retention under PurgeMinAge counts as
// PurgeMinAge.
//
// Removing a row never lets a fence go backwards while the database clock
// does not: fences are at least the database clock in ms times 1000, a row
// is removed only when its fence is below (now - retention) * 1000, and
// the next grant of that name starts at now * 1000. The trade-off is the
// clock: if the database's clock steps back by more than the retention (a
// wrong clock corrected, a failover to a server whose clock is behind; on
// TiDB, servers whose clocks disagree), a name removed just before can be
// granted a fence below one it had. A longer retention covers a larger
// step and keeps more rows; a shorter one keeps fewer. Each batch scans
// the table for removable rows (there is no index on the expiry), so it
// reads every row when few are removable: once a minute per Store. On
// MySQL and MariaDB the scan is a plain SELECT of the names, which locks
// no row, and a DELETE of those names by primary key follows: a DELETE
// that scanned would lock every row it read, live leases' included,
// until it ended (InnoDB), and hold up their Acquire, Refresh and
// Release. Elsewhere a batch is one DELETE (on PostgreSQL and SQLite
// picking its rows in a plain subquery; on TiDB, in a pessimistic
// transaction, it locks only the rows it deletes).
func Retention(d time.Duration) Option { return func(c *config) { c.retention = d } }

// Purge deletes the rows of names whose lease is over (released or
// expired) and that were last granted more than olderThan ago, by the
// database clock, and returns how many it deleted; an olderThan under
// PurgeMinAge counts as PurgeMinAge. It never deletes a live lease, and
// never lets a fence go backwards (see Retention for the condition: a
// database clock that does not step back by more than olderThan): the
// next grant of a deleted name starts at the clock floor, above every
// fence the name had. Purge(ctx, 0) removes every row whose lease is over
// and whose name was last granted more than PurgeMinAge ago. Each row is
// judged again by the database under its row lock, so a row that an
// Acquire takes meanwhile stays.
//
// It deletes in batches of PurgeBatch rows (one statement each; on MySQL
// and MariaDB a read, then DELETEs of what it read), until a
// batch finds fewer, and stops when ctx ends, returning what it deleted so
// far with the context's error. A negative olderThan is refused before
// anything is sent. The store runs one batch by itself now and then (see
// Retention); Purge is for a first cleanup of a large table, or a store
// with Retention turned off.
//
// An Acquire that meets the deletion of its name's row at the same moment
// may be refused although the name is free (on PostgreSQL: its statement
// saw the row that was being deleted); the next attempt gets it.
func (s *Store) Purge(ctx context.Context, olderThan time.Duration) (int64, error) {
	if ctx == nil {
		return 0, errors.New("sqlstore: nil context")
	}
	if olderThan < 0 {
		return 0, fmt.Errorf("sqlstore: Purge(%v): a negative age", olderThan)
	}
	ctx, cancel, err := s.join(ctx, "purge")
	if err != nil {
		return 0, err
	}
	defer cancel()
	var total int64
	for {
		n, more, err := s.purgeBatch(ctx, olderThan)
		total += n
		if err != nil {
			return total, fmt.Errorf("sqlstore: purging rows over before %v ago from %s on %s (%d deleted): %w", olderThan, s.table, s.d, total, err)
		}
		if !more {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("sqlstore: purging %s on %s (%d deleted): %w", s.table, s.d, total, context.Cause(ctx))
		}
	}
}

// purgeBatch runs one batch of the purge and returns how many rows it
// deleted and whether it found a full batch (more may be left): one
// statement (in a transaction where every operation is one: TiDB), or,
// where the table picks the batch first (MySQL, MariaDB), a read of up to
// PurgeBatch names and the DELETE of those names.
func (s *Store) purgeBatch(ctx context.Context, olderThan time.Duration) (int64, bool, error) {
	v := values{age: max(olderThan, PurgeMinAge).Milliseconds()}
	if s.stmts.picks {
		return s.pickAndPurge(ctx, v)
	}
	st := s.stmts.purge
	var n int64
	err := s.retry(ctx, func() error {
		n = 0
		if s.stmts.tx != nil {
			return s.inTx(ctx, func(tx txQuerier) error {
				begin := time.Now()
				args := st.bind(v)
				res, err := tx.ExecContext(ctx, st.SQL, args...)
				if err == nil {
					n, err = res.RowsAffected()
				}
				s.trace(ctx, begin, st.SQL, args, n, err)
				return err
			})
		}
		res, err := s.exec(ctx, st.SQL, st.bind(v))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, n >= PurgeBatch, err
}

// pickAndPurge is a batch in two statements (sqldriver.LeasePurgePicker):
// the pick, a plain SELECT that locks no row, then the DELETE of the
// picked names by primary key (at most purgeNames a statement), which
// locks those rows alone and deletes each only if it is still purgeable
// under its lock. A single DELETE whose condition no index serves would
// lock every row it scans, live leases' included, for as long as it scans
// (InnoDB). The batch is full when the pick found PurgeBatch names,
// however many of them the DELETE kept.
func (s *Store) pickAndPurge(ctx context.Context, v values) (int64, bool, error) {
	names, err := s.pickPurgeable(ctx, v)
	if err != nil || len(names) == 0 {
		return 0, false, err
	}
	st := s.stmts.purge
	var total int64
	for rest := names; len(rest) > 0; {
		chunk := rest[:min(len(rest), s.stmts.purgeNames)]
		rest = rest[len(chunk):]
		query := st.withList(s.dr, len(chunk))
		args := append(st.bind(v), chunk...)
		var n int64
		err := s.retry(ctx, func() error {
			n = 0
			res, err := s.exec(ctx, query, args)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		total += n
		if err != nil {
			return total, false, err
		}
	}
	return total, len(names) >= PurgeBatch, nil
}

// pickPurgeable runs the pick and returns the names it found, as bind
// arguments.
func (s *Store) pickPurgeable(ctx context.Context, v values) (names []any, err error) {
	st := s.stmts.purgePick
	begin := time.Now()
	args := st.bind(v)
	defer func() { s.trace(ctx, begin, st.SQL, args, int64(len(names)), err) }()
	rows, err := s.pool.QueryContext(ctx, st.SQL, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	names = make([]any, 0, PurgeBatch)
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, rows.Err()
}

// autoPurge starts one batch of the automatic retention in the background
// when the last one began more than purgeInterval ago and none is running.
func (s *Store) autoPurge() {
	if s.retention < 0 {
		return
	}
	now := time.Now().UnixNano()
	last := s.lastPurge.Load()
	if last != 0 && now-last < int64(purgeInterval) {
		return
	}
	if !s.lastPurge.CompareAndSwap(last, now) || !s.purging.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.purging.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), purgeTimeout)
		defer cancel()
		ctx, cancelJoin, err := s.join(ctx, "purge")
		if err != nil {
			return // the store's context ended
		}
		defer cancelJoin()
		// An error is the logger's (trace); the next interval tries again.
		_, _, _ = s.purgeBatch(ctx, s.retention)
	}()
}
