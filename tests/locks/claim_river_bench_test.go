package locks

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// i23NopArgs is River's job of BenchmarkClaimRiver: it does nothing.
type i23NopArgs struct{}

func (i23NopArgs) Kind() string { return "i23_nop" }

// i23NopWorker counts the jobs it worked and closes all at the total.
type i23NopWorker struct {
	river.WorkerDefaults[i23NopArgs]
	done  atomic.Int64
	total int64
	all   chan struct{}
}

func (w *i23NopWorker) Work(context.Context, *river.Job[i23NopArgs]) error {
	if w.done.Add(1) == w.total {
		close(w.all)
	}
	return nil
}

// BenchmarkClaimRiver: 2,000 no-op jobs worked on the shared PostgreSQL
// by River (v0.31, riverpgxv5, in its own schema i23_river, MaxWorkers n,
// 1 ms fetch cooldown, 5 ms poll) and by n goroutines that
// lockplugin.Claim 10 jobs at a time and mark them done (one UPDATE per
// batch, as River's batch completer does), n = 1 and 8. River's time
// runs from Client.Start to the last job worked; jobs are inserted
// untimed. Reports jobs/s.
func BenchmarkClaimRiver(b *testing.B) {
	const jobs = 2000
	tg := testdb.Get(b, testdb.Postgres)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, tg.DSN)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	const schema = "i23_river"
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema); err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("n=%d/baseline=river", n), func(b *testing.B) {
			var spent time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if _, err := pool.Exec(ctx, "TRUNCATE "+schema+".river_job"); err != nil {
					b.Fatal(err)
				}
				w := &i23NopWorker{total: jobs, all: make(chan struct{})}
				workers := river.NewWorkers()
				river.AddWorker(workers, w)
				client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
					Schema: schema, Logger: quiet, Workers: workers,
					Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: n}},
					FetchCooldown: time.Millisecond, FetchPollInterval: 5 * time.Millisecond,
				})
				if err != nil {
					b.Fatal(err)
				}
				params := make([]river.InsertManyParams, jobs)
				for j := range params {
					params[j] = river.InsertManyParams{Args: i23NopArgs{}}
				}
				if _, err := client.InsertMany(ctx, params); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				if err := client.Start(ctx); err != nil {
					b.Fatal(err)
				}
				select {
				case <-w.all:
				case <-time.After(2 * time.Minute):
					b.Fatalf("River worked %d of %d jobs in 2 minutes", w.done.Load(), jobs)
				}
				spent += time.Since(start)
				b.StopTimer()
				if err := client.Stop(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*jobs)/spent.Seconds(), "jobs/s")
		})
		b.Run(fmt.Sprintf("n=%d/lockplugin", n), func(b *testing.B) {
			var spent time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				fillBenchQueue(b, tg, jobs)
				b.StartTimer()
				var claimed atomic.Int64
				errs, elapsed := scenario.Race(n, func(w int) error {
					for {
						got, err := lockplugin.Claim[i13BenchJob](ctx, tg.DB, 10,
							clause.Eq{Column: clause.Column{Name: "state"}, Value: "queued"},
							map[string]any{"state": "running", "worker": w})
						if err != nil || len(got) == 0 {
							return err
						}
						ids := make([]int64, len(got))
						for k, j := range got {
							ids[k] = j.ID
						}
						if err := tg.DB.Model(&i13BenchJob{}).Where("id IN ?", ids).Update("state", "done").Error; err != nil {
							return err
						}
						claimed.Add(int64(len(got)))
					}
				})
				if err := scenario.FirstError(errs); err != nil {
					b.Fatal(err)
				}
				if claimed.Load() != jobs {
					b.Fatalf("claimed %d of %d jobs", claimed.Load(), jobs)
				}
				spent += elapsed
			}
			b.ReportMetric(float64(b.N*jobs)/spent.Seconds(), "jobs/s")
		})
	}
}
