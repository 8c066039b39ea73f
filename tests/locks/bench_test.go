package locks

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// BenchmarkRender: building the same locking query through DryRun with
// lockplugin.ForUpdate (plugin registered: validation plus rendering) and
// with GORM's clause.Locking on plain GORM.
func BenchmarkRender(b *testing.B) {
	open := func(withPlugin bool) *gorm.DB {
		db, err := gorm.Open(postgres.New(postgres.Config{DSN: "host=127.0.0.1 port=1 dbname=lk"}), &gorm.Config{
			DryRun: true, DisableAutomaticPing: true, Logger: logger.Discard,
		})
		if err != nil {
			b.Fatal(err)
		}
		if withPlugin {
			if err := db.Use(lockplugin.New()); err != nil {
				b.Fatal(err)
			}
		}
		return db
	}
	run := func(b *testing.B, db *gorm.DB, lock clause.Expression, want string) {
		var jobs []lkJob
		tx := db.Clauses(lock).Where("state = ?", "queued").Order("id").Limit(10).Find(&jobs)
		if tx.Error != nil || tx.Statement.SQL.String() != want {
			b.Fatalf("got %q, %v; want %q", tx.Statement.SQL.String(), tx.Error, want)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			var jobs []lkJob
			db.Clauses(lock).Where("state = ?", "queued").Order("id").Limit(10).Find(&jobs)
		}
	}
	const want = `SELECT * FROM "lk_jobs" WHERE state = $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`
	b.Run("postgres/lockplugin", func(b *testing.B) {
		run(b, open(true), lockplugin.ForUpdate(lockplugin.SkipLocked), want)
	})
	b.Run("postgres/baseline=gorm-locking", func(b *testing.B) {
		run(b, open(false), clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsSkipLocked}, want)
	})
}

// benchJob is a row of the claim benchmark's queue.
type benchJob struct {
	ID     int64 `gorm:"primaryKey;autoIncrement:false"`
	State  string
	Worker int
	Claims int
}

func (benchJob) TableName() string { return "lk_bench_jobs" }

// BenchmarkClaimSkipLocked: one claim of 10 jobs per op on PostgreSQL
// (BEGIN; SELECT ... FOR UPDATE SKIP LOCKED LIMIT 10; UPDATE ... WHERE id
// IN (...); COMMIT), through GORM with lockplugin, through plain GORM with
// clause.Locking, and written by hand with database/sql, all on the same
// connection pool.
func BenchmarkClaimSkipLocked(b *testing.B) {
	tg := testdb.Get(b, testdb.Postgres)
	fill := func(b *testing.B) {
		b.StopTimer()
		defer b.StartTimer()
		tg.Reset(b, &benchJob{})
		if err := tg.DB.Exec(`CREATE INDEX lk_bench_jobs_state_id ON lk_bench_jobs (state, id)`).Error; err != nil {
			b.Fatal(err)
		}
		err := tg.DB.Exec(`INSERT INTO lk_bench_jobs (id, state, worker, claims) SELECT g, 'queued', 0, 0 FROM generate_series(1, ?) AS g`, b.N*10).Error
		if err != nil {
			b.Fatal(err)
		}
		if err := tg.DB.Exec(`ANALYZE lk_bench_jobs`).Error; err != nil {
			b.Fatal(err)
		}
	}
	check := func(b *testing.B) {
		b.StopTimer()
		var left int64
		if err := tg.DB.Model(&benchJob{}).Where("state = ?", "queued").Count(&left).Error; err != nil || left != 0 {
			b.Fatalf("%d jobs left unclaimed, %v", left, err)
		}
		b.ReportMetric(10, "jobs/op")
	}
	ctx := context.Background()

	claimGORM := func(b *testing.B, db *gorm.DB, lock clause.Expression) {
		fill(b)
		db = db.WithContext(ctx)
		for i := 0; i < b.N; i++ {
			err := db.Transaction(func(tx *gorm.DB) error {
				var jobs []benchJob
				err := tx.Clauses(lock).Where("state = ?", "queued").Order("id").Limit(10).Find(&jobs).Error
				if err != nil {
					return err
				}
				ids := make([]int64, len(jobs))
				for i, j := range jobs {
					ids[i] = j.ID
				}
				return tx.Model(&benchJob{}).Where("id IN ?", ids).Updates(map[string]any{
					"state": "running", "worker": 1, "claims": gorm.Expr("claims + 1"),
				}).Error
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		check(b)
	}

	b.Run("postgres/lockplugin", func(b *testing.B) {
		claimGORM(b, tg.DB, lockplugin.ForUpdate(lockplugin.SkipLocked))
	})

	// Plain GORM with its own clause.Locking, on the same pool: what
	// lockplugin itself costs, apart from GORM.
	b.Run("postgres/baseline=gorm-locking", func(b *testing.B) {
		plain, err := gorm.Open(postgres.New(postgres.Config{Conn: tg.SQL}), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			b.Fatal(err)
		}
		claimGORM(b, plain, clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsSkipLocked})
	})

	b.Run("postgres/baseline=raw-sql", func(b *testing.B) {
		fill(b)
		for i := 0; i < b.N; i++ {
			if err := claimRaw(ctx, tg.SQL); err != nil {
				b.Fatal(err)
			}
		}
		check(b)
	})
}

// claimRaw is the claim written by hand: the same statements GORM sends.
func claimRaw(ctx context.Context, db *sql.DB) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	rows, err := tx.QueryContext(ctx, `SELECT * FROM "lk_bench_jobs" WHERE state = $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`, "queued", 10)
	if err != nil {
		return err
	}
	var jobs []benchJob
	for rows.Next() {
		var j benchJob
		if err := rows.Scan(&j.ID, &j.State, &j.Worker, &j.Claims); err != nil {
			_ = rows.Close()
			return err
		}
		jobs = append(jobs, j)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if len(jobs) == 0 {
		return tx.Commit()
	}
	args := []any{"running", 1}
	marks := make([]string, len(jobs))
	for i, j := range jobs {
		args = append(args, j.ID)
		marks[i] = fmt.Sprintf("$%d", i+3)
	}
	q := `UPDATE "lk_bench_jobs" SET "claims"=claims + 1,"state"=$1,"worker"=$2 WHERE id IN (` + strings.Join(marks, ",") + `)`
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return err
	}
	return tx.Commit()
}
