package locks

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// i13BenchJob is a row of the claim benchmark's queue.
type i13BenchJob struct {
	ID     int64  `gorm:"primaryKey;autoIncrement:false"`
	State  string `gorm:"size:16;not null"`
	Worker int    `gorm:"not null"`
	Claims int    `gorm:"not null"`
}

func (i13BenchJob) TableName() string { return "i13_bench_jobs" }

// claimWorkers is how many goroutines claim at once in BenchmarkClaim.
const claimWorkers = 8

// BenchmarkClaim: 8 workers claim batches of 10 jobs from one queue, with
// lockplugin.Claim and with the claim written by hand in the same run
// (database/sql, the fewest round trips the database allows: on
// PostgreSQL River's one statement, WITH c AS (SELECT id ... FOR UPDATE
// SKIP LOCKED LIMIT 10) UPDATE ... FROM c ... RETURNING; on SQLite one
// UPDATE ... RETURNING; on MySQL/MariaDB BEGIN, SELECT ... FOR UPDATE SKIP
// LOCKED, UPDATE, COMMIT). Both set state and worker and count the claim
// (claims = claims + 1); on MySQL/MariaDB that expression makes Claim read
// the rows back, one round trip more than by hand, which knows the count
// from its locked read. One op is one claim; jobs/s is reported.
func BenchmarkClaim(b *testing.B) {
	for _, kind := range []string{testdb.Postgres, testdb.MySQL, testdb.SQLite} {
		b.Run(kind, func(b *testing.B) {
			tg := testdb.Get(b, kind)
			b.Run("lockplugin", func(b *testing.B) {
				runClaimBench(b, tg, func(ctx context.Context, w int) (int, error) {
					jobs, err := lockplugin.Claim[i13BenchJob](ctx, tg.DB, 10,
						clause.Eq{Column: clause.Column{Name: "state"}, Value: "queued"},
						map[string]any{"state": "running", "worker": w, "claims": gorm.Expr("claims + 1")})
					return len(jobs), err
				})
			})
			b.Run("baseline=raw-sql", func(b *testing.B) {
				claim := handClaim(tg)
				runClaimBench(b, tg, func(ctx context.Context, w int) (int, error) { return claim(ctx, tg.SQL, w) })
			})
		})
	}
}

// BenchmarkClaimRatio is BenchmarkClaim interleaved, for a ratio that
// holds on a busy machine: each op drains a queue of 2,000 jobs with 8
// workers twice, once with lockplugin.Claim and once by hand, in
// alternating order, on freshly filled tables. It reports the jobs/s of
// each and claim/hand, the ratio of the two. mysql-values sets claims to 1
// instead of claims + 1 (the same end state): Claim then needs no read-back.
func BenchmarkClaimRatio(b *testing.B) {
	const jobs = 2000
	incr := func(w int) map[string]any {
		return map[string]any{"state": "running", "worker": w, "claims": gorm.Expr("claims + 1")}
	}
	// The same end state from values alone (every job is claimed once), so
	// that the MySQL-family Claim need not read its rows back.
	values := func(w int) map[string]any { return map[string]any{"state": "running", "worker": w, "claims": 1} }
	for _, c := range []struct {
		name, kind string
		set        func(w int) map[string]any
	}{
		{testdb.Postgres, testdb.Postgres, incr},
		{testdb.MySQL, testdb.MySQL, incr},
		{testdb.MySQL + "-values", testdb.MySQL, values},
		{testdb.SQLite, testdb.SQLite, incr},
	} {
		b.Run(c.name, func(b *testing.B) {
			tg := testdb.Get(b, c.kind)
			hand := handClaim(tg)
			variants := []func(ctx context.Context, w int) (int, error){
				func(ctx context.Context, w int) (int, error) {
					got, err := lockplugin.Claim[i13BenchJob](ctx, tg.DB, 10,
						clause.Eq{Column: clause.Column{Name: "state"}, Value: "queued"}, c.set(w))
					return len(got), err
				},
				func(ctx context.Context, w int) (int, error) { return hand(ctx, tg.SQL, w) },
			}
			var spent [2]time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k := 0; k < 2; k++ {
					v := (i + k) % 2
					b.StopTimer()
					fillBenchQueue(b, tg, jobs)
					b.StartTimer()
					d, n := drainQueue(b, variants[v])
					if n != jobs {
						b.Fatalf("variant %d claimed %d of %d jobs", v, n, jobs)
					}
					spent[v] += d
				}
			}
			b.StopTimer()
			claimRate := float64(b.N*jobs) / spent[0].Seconds()
			handRate := float64(b.N*jobs) / spent[1].Seconds()
			b.ReportMetric(claimRate, "claim-jobs/s")
			b.ReportMetric(handRate, "hand-jobs/s")
			b.ReportMetric(claimRate/handRate, "claim/hand")
		})
	}
}

// fillBenchQueue resets i13_bench_jobs to n queued jobs.
func fillBenchQueue(b *testing.B, tg *testdb.Target, n int) {
	b.Helper()
	tg.Reset(b, &i13BenchJob{})
	d := tg.Dialect
	if err := tg.DB.Exec("CREATE INDEX " + drivers.For(d).QuoteIdent("i13_bench_jobs_state_id") + " ON " + drivers.For(d).QuoteIdent("i13_bench_jobs") + " (state, id)").Error; err != nil {
		b.Fatal(err)
	}
	jobs := make([]i13BenchJob, n)
	for i := range jobs {
		jobs[i] = i13BenchJob{ID: int64(i + 1), State: "queued"}
	}
	if err := tg.DB.CreateInBatches(&jobs, 500).Error; err != nil {
		b.Fatal(err)
	}
	if d.Kind == dialects.Postgres {
		_ = tg.DB.Exec("ANALYZE i13_bench_jobs").Error
	}
}

// drainQueue runs claim on claimWorkers goroutines until each gets
// nothing, and returns the time taken and the jobs claimed.
func drainQueue(b *testing.B, claim func(ctx context.Context, w int) (int, error)) (time.Duration, int) {
	var claimed atomic.Int64
	errs, elapsed := scenario.Race(claimWorkers, func(w int) error {
		for {
			n, err := claim(context.Background(), w)
			if err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			claimed.Add(int64(n))
		}
	})
	if err := scenario.FirstError(errs); err != nil {
		b.Fatal(err)
	}
	return elapsed, int(claimed.Load())
}

// runClaimBench fills the queue, then runs claim on claimWorkers
// goroutines for b.N claims in all, and checks that no job was claimed
// twice.
func runClaimBench(b *testing.B, tg *testdb.Target, claim func(ctx context.Context, w int) (int, error)) {
	ctx := context.Background()
	tg.Reset(b, &i13BenchJob{})
	d := tg.Dialect
	if err := tg.DB.Exec("CREATE INDEX " + drivers.For(d).QuoteIdent("i13_bench_jobs_state_id") + " ON " + drivers.For(d).QuoteIdent("i13_bench_jobs") + " (state, id)").Error; err != nil {
		b.Fatal(err)
	}
	total := b.N*10 + claimWorkers*10
	jobs := make([]i13BenchJob, total)
	for i := range jobs {
		jobs[i] = i13BenchJob{ID: int64(i + 1), State: "queued"}
	}
	if err := tg.DB.CreateInBatches(&jobs, 500).Error; err != nil {
		b.Fatal(err)
	}
	if d.Kind == dialects.Postgres {
		_ = tg.DB.Exec("ANALYZE i13_bench_jobs").Error
	}
	var claimed, worker atomic.Int64
	b.SetParallelism((claimWorkers + 1) / 2) // GOMAXPROCS is 2 on the CI machine: 8 goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := int(worker.Add(1))
		for pb.Next() {
			n, err := claim(ctx, w)
			if err != nil {
				b.Error(err)
				return
			}
			claimed.Add(int64(n))
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(claimed.Load())/b.Elapsed().Seconds(), "jobs/s")
	var twice int64
	if err := tg.DB.Model(&i13BenchJob{}).Where("claims > 1 OR (state = ? AND claims <> 1)", "running").Count(&twice).Error; err != nil {
		b.Fatal(err)
	}
	var running int64
	if err := tg.DB.Model(&i13BenchJob{}).Where("state = ?", "running").Count(&running).Error; err != nil {
		b.Fatal(err)
	}
	if twice != 0 || running != claimed.Load() {
		b.Fatalf("%d jobs claimed twice; %d running, %d claimed", twice, running, claimed.Load())
	}
}

// handClaim returns the claim written by hand for tg's database.
func handClaim(tg *testdb.Target) func(ctx context.Context, db *sql.DB, w int) (int, error) {
	switch tg.Dialect.Kind {
	case dialects.Postgres:
		const q = `WITH c AS (SELECT id FROM i13_bench_jobs WHERE state = $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) ` +
			`UPDATE i13_bench_jobs SET state = $3, worker = $4, claims = claims + 1 FROM c WHERE i13_bench_jobs.id = c.id ` +
			`RETURNING i13_bench_jobs.id, i13_bench_jobs.state, i13_bench_jobs.worker, i13_bench_jobs.claims`
		return func(ctx context.Context, db *sql.DB, w int) (int, error) {
			return scanJobs(db.QueryContext(ctx, q, "queued", 10, "running", w))
		}
	case dialects.SQLite:
		const q = `UPDATE i13_bench_jobs SET state = ?, worker = ?, claims = claims + 1 WHERE id IN ` +
			`(SELECT id FROM i13_bench_jobs WHERE state = ? ORDER BY id LIMIT ?) RETURNING id, state, worker, claims`
		return func(ctx context.Context, db *sql.DB, w int) (int, error) {
			return scanJobs(db.QueryContext(ctx, q, "running", w, "queued", 10))
		}
	}
	return func(ctx context.Context, db *sql.DB, w int) (n int, err error) {
		// READ COMMITTED, as Claim's own: at InnoDB's REPEATABLE READ
		// 8 claimers deadlock on the (state, id) index's gap locks.
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			return 0, err
		}
		defer func() {
			if err != nil {
				_ = tx.Rollback()
			}
		}()
		jobs, err := scanJobList(tx.QueryContext(ctx, "SELECT id, state, worker, claims FROM i13_bench_jobs WHERE state = ? ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED", "queued", 10))
		if err != nil || len(jobs) == 0 {
			return 0, errorsJoinCommit(err, tx)
		}
		args := []any{"running", w}
		for _, j := range jobs {
			args = append(args, j.ID)
		}
		q := "UPDATE i13_bench_jobs SET state = ?, worker = ?, claims = claims + 1 WHERE id IN (?" + strings.Repeat(",?", len(jobs)-1) + ")"
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return 0, err
		}
		return len(jobs), tx.Commit()
	}
}

func errorsJoinCommit(err error, tx *sql.Tx) error {
	if err != nil {
		return err
	}
	return tx.Commit()
}

func scanJobs(rows *sql.Rows, err error) (int, error) {
	jobs, err := scanJobList(rows, err)
	return len(jobs), err
}

func scanJobList(rows *sql.Rows, err error) ([]i13BenchJob, error) {
	if err != nil {
		return nil, err
	}
	var jobs []i13BenchJob
	for rows.Next() {
		var j i13BenchJob
		if err := rows.Scan(&j.ID, &j.State, &j.Worker, &j.Claims); err != nil {
			_ = rows.Close()
			return nil, err
		}
		jobs = append(jobs, j)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("closing rows: %w", err)
	}
	return jobs, rows.Err()
}

// BenchmarkClaimDrained: a queue table of 200,000 jobs with the index the
// README advises, (state, id): "full" has every job queued, "drained" has
// the first 100,000 (in key order) done, as a queue that has run a while.
// Each op claims 2,000 jobs from each table (8 workers, 10 per Claim), in
// alternating order, then re-queues them untimed. It reports the jobs/s of
// each and drained/full (the bar: 0.70 or more). Seeded by SQL.
func BenchmarkClaimDrained(b *testing.B) {
	const rows, batch = 200000, 2000
	for _, kind := range []string{testdb.Postgres, testdb.MySQL} {
		b.Run(kind, func(b *testing.B) {
			tg := testdb.Get(b, kind)
			tables := []string{"i23_full_jobs", "i23_drained_jobs"}
			seedDrained(b, tg, tables[0], rows, 0)
			seedDrained(b, tg, tables[1], rows, rows/2)
			var spent [2]time.Duration
			var claimed [2]int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k := 0; k < 2; k++ {
					v := (i + k) % 2
					d, n := claimSome(b, tg.DB.Table(tables[v]), batch)
					spent[v] += d
					claimed[v] += n
					b.StopTimer()
					if err := tg.DB.Exec("UPDATE " + tables[v] + " SET state = 'queued', worker = 0 WHERE state = 'running'").Error; err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
			b.StopTimer()
			full := float64(claimed[0]) / spent[0].Seconds()
			drained := float64(claimed[1]) / spent[1].Seconds()
			b.ReportMetric(full, "full-jobs/s")
			b.ReportMetric(drained, "drained-jobs/s")
			b.ReportMetric(drained/full, "drained/full")
		})
	}
}

// seedDrained creates table with rows jobs, the first done of them done,
// the rest queued, and the (state, id) index.
func seedDrained(b *testing.B, tg *testdb.Target, table string, rows, done int) {
	b.Helper()
	db := tg.DB
	_ = db.Migrator().DropTable(table)
	if err := db.Table(table).AutoMigrate(&i13BenchJob{}); err != nil {
		b.Fatal(err)
	}
	var gen string
	switch {
	case tg.Dialect.Kind == dialects.Postgres:
		gen = fmt.Sprintf("SELECT g, CASE WHEN g <= %d THEN 'done' ELSE 'queued' END, 0, 0 FROM generate_series(1, %d) AS g", done, rows)
	case tg.Dialect.Kind == dialects.MariaDB:
		gen = fmt.Sprintf("SELECT seq, CASE WHEN seq <= %d THEN 'done' ELSE 'queued' END, 0, 0 FROM seq_1_to_%d", done, rows)
	default:
		if err := db.Exec(fmt.Sprintf("SET SESSION cte_max_recursion_depth = %d", rows+1)).Error; err != nil {
			b.Fatal(err)
		}
		gen = fmt.Sprintf("WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < %d) SELECT g, CASE WHEN g <= %d THEN 'done' ELSE 'queued' END, 0, 0 FROM s", rows, done)
	}
	d := tg.Dialect
	for _, q := range []string{
		"INSERT INTO " + table + " (id, state, worker, claims) " + gen,
		"CREATE INDEX " + drivers.For(d).QuoteIdent(table+"_state_id") + " ON " + drivers.For(d).QuoteIdent(table) + " (state, id)",
	} {
		if err := db.Exec(q).Error; err != nil {
			b.Fatal(err)
		}
	}
	if d.Kind == dialects.Postgres {
		_ = db.Exec("VACUUM ANALYZE " + table).Error
	} else {
		_ = db.Exec("ANALYZE TABLE " + table).Error
	}
}

// claimSome claims about want jobs from db's table with claimWorkers
// goroutines, 10 per Claim, and returns the time taken and the jobs
// claimed.
func claimSome(b *testing.B, db *gorm.DB, want int64) (time.Duration, int64) {
	var claimed atomic.Int64
	errs, elapsed := scenario.Race(claimWorkers, func(w int) error {
		for claimed.Load() < want {
			jobs, err := lockplugin.Claim[i13BenchJob](context.Background(), db, 10,
				clause.Eq{Column: clause.Column{Name: "state"}, Value: "queued"},
				map[string]any{"state": "running", "worker": w})
			if err != nil {
				return err
			}
			if len(jobs) == 0 {
				return nil
			}
			claimed.Add(int64(len(jobs)))
		}
		return nil
	})
	if err := scenario.FirstError(errs); err != nil {
		b.Fatal(err)
	}
	return elapsed, claimed.Load()
}
