package holds_test

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/require"
)

const (
	benchSeats   = "holds_bench_seats"
	benchHolds   = "holds_bench_holds"
	benchWorkers = 8
)

// benchSeat is a resource with room for every acquisition a run makes.
type benchSeat struct {
	ID       uint
	Capacity int
}

func (benchSeat) TableName() string { return benchSeats }

func (s benchSeat) HoldCapacity() int { return s.Capacity }

// BenchmarkAcquireHot: 8 workers acquire holds on one resource, so every
// acquisition queues on the same row lock.
func BenchmarkAcquireHot(b *testing.B) { benchAcquire(b, 1) }

// BenchmarkAcquireSpread: 8 workers acquire holds spread over 100 resources.
func BenchmarkAcquireSpread(b *testing.B) { benchAcquire(b, 100) }

// BenchmarkAcquireSerial: one worker over 100 resources, where the client's
// CPU per acquisition is not blurred by the scheduler's spinning between
// eight waiting workers.
func BenchmarkAcquireSerial(b *testing.B) { benchAcquireWith(b, 100, 1) }

// benchAcquire measures acquisitions per second through holds.Acquire
// (lockplugin) and through the same transaction written by hand with
// database/sql (baseline=raw-sql), on the same pool in the same run.
func benchAcquire(b *testing.B, resources int) { benchAcquireWith(b, resources, benchWorkers) }

func benchAcquireWith(b *testing.B, resources, workers int) {
	for _, kind := range []string{testdb.SQLite, testdb.Postgres, testdb.MySQL} {
		b.Run(kind, func(b *testing.B) {
			tg := testdb.Get(b, kind)
			seats := benchSetup(b, tg, resources)
			b.Run("lockplugin", func(b *testing.B) {
				opt := holds.Table(benchHolds)
				runWorkers(b, tg, workers, func(ctx context.Context, i int) error {
					h, err := holds.Acquire(ctx, tg.DB, &seats[i%len(seats)], fmt.Sprintf("h%d", i), opt)
					if err == nil && h == nil {
						err = fmt.Errorf("acquisition %d: no hold and no error", i)
					}
					return err
				})
			})
			b.Run("baseline=raw-sql", func(b *testing.B) {
				raw := newRawAcquirer(tg)
				runWorkers(b, tg, workers, func(ctx context.Context, i int) error {
					return raw.acquire(ctx, &seats[i%len(seats)], fmt.Sprintf("h%d", i))
				})
			})
		})
	}
}

func benchSetup(b *testing.B, tg *testdb.Target, resources int) []benchSeat {
	b.Helper()
	tg.Reset(b, &benchSeat{})
	require.NoError(b, tg.DB.Migrator().DropTable(benchHolds))
	require.NoError(b, holds.Migrate(tg.DB, holds.Table(benchHolds)))
	seats := make([]benchSeat, resources)
	for i := range seats {
		seats[i].Capacity = 1 << 30
	}
	require.NoError(b, tg.DB.Create(&seats).Error)
	return seats
}

// runWorkers runs b.N acquisitions on workers goroutines and reports acq/s. The holds
// table is emptied first, so every run counts from zero.
func runWorkers(b *testing.B, tg *testdb.Target, workers int, acquire func(ctx context.Context, i int) error) {
	require.NoError(b, tg.DB.Session(&gorm.Session{AllowGlobalUpdate: true}).Table(benchHolds).Delete(nil).Error)
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := acquire(ctx, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	cpu := cpuTime() - cpu0
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acq/s")
	// The client's CPU per acquisition (user and system time of this
	// process; on SQLite that includes the database engine).
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rawAcquirer is the baseline: the lock-count-insert transaction written by
// hand with database/sql.
type rawAcquirer struct {
	db                        *sql.DB
	d                         dialects.Dialect
	lock, read, count, insert string
}

func newRawAcquirer(tg *testdb.Target) *rawAcquirer {
	d := tg.Dialect
	now := drivers.For(d).NowMillis()
	r := &rawAcquirer{db: tg.SQL, d: d}
	r.read = "SELECT capacity FROM " + benchSeats + " WHERE id = ? FOR UPDATE"
	if d.Kind == dialects.SQLite {
		r.lock = "UPDATE " + benchSeats + " SET id = id WHERE id = ?"
		r.read = "SELECT capacity FROM " + benchSeats + " WHERE id = ?"
	}
	r.count = "SELECT COUNT(*), MIN(CASE WHEN holder = ? THEN id END), " + now + " FROM " + benchHolds +
		" WHERE resource_type = ? AND resource_id = ? AND released_at IS NULL AND (expires_at IS NULL OR expires_at > " + now + ")"
	r.insert = "INSERT INTO " + benchHolds + " (resource_type, resource_id, holder, created_at) VALUES (?, ?, ?, ?)"
	if d.Kind == dialects.Postgres {
		r.read, r.count, r.insert = dollars(r.read), dollars(r.count), dollars(r.insert)+" RETURNING id"
	}
	return r
}

// dollars numbers ? placeholders the PostgreSQL way.
func dollars(q string) string {
	var sb strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			fmt.Fprintf(&sb, "$%d", n)
			continue
		}
		sb.WriteRune(c)
	}
	return sb.String()
}

func (r *rawAcquirer) acquire(ctx context.Context, s *benchSeat, holder string) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if r.lock != "" {
		if _, err := tx.ExecContext(ctx, r.lock, s.ID); err != nil {
			return err
		}
	}
	var capacity int64
	if err := tx.QueryRowContext(ctx, r.read, s.ID).Scan(&capacity); err != nil {
		return err
	}
	var (
		n, now int64
		mine   sql.NullInt64
	)
	id := fmt.Sprint(s.ID)
	if err := tx.QueryRowContext(ctx, r.count, holder, benchSeats, id).Scan(&n, &mine, &now); err != nil {
		return err
	}
	if mine.Valid || n >= capacity {
		return fmt.Errorf("raw-sql: seat %s full or already held", id)
	}
	if r.d.Kind == dialects.Postgres {
		var hid int64
		if err := tx.QueryRowContext(ctx, r.insert, benchSeats, id, holder, now).Scan(&hid); err != nil {
			return err
		}
	} else {
		res, err := tx.ExecContext(ctx, r.insert, benchSeats, id, holder, now)
		if err != nil {
			return err
		}
		if _, err := res.LastInsertId(); err != nil {
			return err
		}
	}
	return tx.Commit()
}
