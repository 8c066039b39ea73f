package locks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// i13Config sizes the issue-13 scenarios: 8 workers, 2,000 jobs.
var i13Config = scenario.Config{Workers: 8, Rounds: 25, Prefix: "i13"}

// TestClaimQueue: 8 workers claim 2,000 jobs with lockplugin.Claim, 10 at
// a time, on every reachable database; each job is claimed exactly once
// and comes back as claimed. The same claims without a lock (the
// baseline: read, then mark) take jobs more than once.
func TestClaimQueue(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		small := i13Config
		small.Rounds = 3
		base, err := scenario.QueueUnprotected(t.Context(), tg.Plain, small)
		if err != nil {
			t.Fatalf("unprotected queue: %v", err)
		}
		t.Logf("no lock: %s in %v", base.Observed, base.Elapsed)
		if base.Lost <= 0 {
			t.Fatalf("the unprotected queue claimed no job twice (%s): the scenario cannot show anything", base.Observed)
		}

		r, err := scenario.ClaimQueue(t.Context(), tg.DB, i13Config)
		if err != nil {
			t.Fatal(err)
		}
		if tg.Dialect.Require(dialects.QueueClaim) != nil {
			if r.Unsupported == "" {
				t.Fatalf("Claim on %s must report Unsupported, got %+v", tg.Dialect, r)
			}
			t.Logf("not supported: %s", r.Unsupported)
			return
		}
		t.Logf("Claim: %s in %v (%.0f jobs/s)", r.Observed, r.Elapsed, r.OpsPerSecond())
		if r.Ops != 2000 || r.Lost != 0 || !r.OK {
			t.Fatalf("Claim: %+v", r)
		}
	})
}

// i13ClaimRow has the column types a claim must read back as GORM would:
// NULL into a plain string, pointers, times, a Scanner, soft delete.
type i13ClaimRow struct {
	ID        int64 `gorm:"primaryKey;autoIncrement:false"`
	State     string
	Note      string `gorm:"default:null"`
	Count     *int
	Due       time.Time
	Seen      *time.Time
	Tag       sql.NullString
	Ratio     float64
	Flag      bool
	DeletedAt gorm.DeletedAt
}

func (i13ClaimRow) TableName() string { return "i13_claim_rows" }

// TestClaimReadsLikeFind: the rows Claim returns equal what GORM's Find
// reads afterwards, column type by column type; soft-deleted rows are not
// claimed.
func TestClaimReadsLikeFind(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		tg.Reset(t, &i13ClaimRow{})
		ctx := t.Context()
		three := 3
		due := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		rows := []i13ClaimRow{
			{ID: 1, State: "queued", Count: &three, Due: due, Seen: &due, Tag: sql.NullString{String: "x", Valid: true}, Ratio: 0.5, Flag: true},
			{ID: 2, State: "queued", Due: due},
			{ID: 3, State: "queued", Due: due},
		}
		if err := tg.DB.Create(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if err := tg.DB.Delete(&i13ClaimRow{}, 3).Error; err != nil {
			t.Fatal(err)
		}
		got, err := lockplugin.Claim[i13ClaimRow](ctx, tg.DB, 10, clause.Eq{Column: clause.Column{Name: "state"}, Value: "queued"},
			map[string]any{"state": "running"})
		if refusedClaim(t, tg, err) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(got, func(i, j int) bool { return got[i].ID < got[j].ID })
		var want []i13ClaimRow
		if err := tg.DB.Order("id").Find(&want).Error; err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || len(want) != 2 {
			t.Fatalf("claimed %d rows, Find reads %d; want 2 and 2 (row 3 is soft-deleted)", len(got), len(want))
		}
		for i := range want {
			if g, w := fmt.Sprintf("%+v", deref(got[i])), fmt.Sprintf("%+v", deref(want[i])); g != w {
				t.Errorf("row %d\nClaim: %s\n Find: %s", want[i].ID, g, w)
			}
		}
	})
}

// deref prints a row's pointers as their values, and times in UTC.
func deref(r i13ClaimRow) string {
	c, s := "nil", "nil"
	if r.Count != nil {
		c = fmt.Sprint(*r.Count)
	}
	if r.Seen != nil {
		s = r.Seen.UTC().String()
	}
	return fmt.Sprintf("%d %q %q count=%s due=%s seen=%s tag=%v ratio=%v flag=%v deleted=%v",
		r.ID, r.State, r.Note, c, r.Due.UTC(), s, r.Tag, r.Ratio, r.Flag, r.DeletedAt.Valid)
}

// sqlRecorder is a gorm.ConnPool that records the statements it is sent
// and fails them: the exact SQL of a database that cannot run here.
type sqlRecorder struct{ sent []string }

func (r *sqlRecorder) PrepareContext(context.Context, string) (*sql.Stmt, error) {
	return nil, errFakePool
}

func (r *sqlRecorder) ExecContext(_ context.Context, q string, args ...any) (sql.Result, error) {
	r.sent = append(r.sent, fmt.Sprint(q, args))
	return nil, errFakePool
}

func (r *sqlRecorder) QueryContext(_ context.Context, q string, args ...any) (*sql.Rows, error) {
	r.sent = append(r.sent, fmt.Sprint(q, args))
	return nil, errFakePool
}

func (r *sqlRecorder) QueryRowContext(context.Context, string, ...any) *sql.Row { return nil }

// TestClaimSQLServerSQL: the one statement Claim sends through GORM's real
// SQL Server dialector (live in TestClaimQueue where
// LOCKPLUGIN_SQLSERVER_DSN is set).
func TestClaimSQLServerSQL(t *testing.T) {
	rec := &sqlRecorder{}
	db, err := gorm.Open(sqlserver.New(sqlserver.Config{Conn: rec}), &gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Use(lockplugin.New()); err != nil {
		t.Fatal(err)
	}
	_, err = lockplugin.Claim[i13BenchJob](t.Context(), db, 10, clause.Eq{Column: clause.Column{Name: "state"}, Value: "queued"},
		map[string]any{"state": "running", "worker": 3, "claims": gorm.Expr("claims + ?", 1)})
	if !errors.Is(err, errFakePool) {
		t.Fatalf("want the pool's error, got %v", err)
	}
	want := `UPDATE TOP (@p1) [i13_bench_jobs] WITH (UPDLOCK, READPAST, ROWLOCK) SET [claims]=claims + @p2,[state]=@p3,[worker]=@p4 OUTPUT INSERTED.* WHERE ("state" = @p5)[10 1 running 3 queued]`
	if len(rec.sent) != 1 || rec.sent[0] != want {
		t.Fatalf("sent\n%q\nwant\n%q", rec.sent, want)
	}
}

// TestClaimInCallersTransaction: inside a caller's transaction Claim's
// rows stay claimed only if it commits; while it is open, another Claim
// passes them over (SKIP LOCKED; SQLite's one writer makes the other wait
// instead, so it is not raced there).
func TestClaimInCallersTransaction(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		tg.Reset(t, &i13BenchJob{})
		ctx := liveContext(t)
		jobs := []i13BenchJob{{ID: 1, State: "queued"}, {ID: 2, State: "queued"}, {ID: 3, State: "queued"}}
		if err := tg.DB.Create(&jobs).Error; err != nil {
			t.Fatal(err)
		}
		queued := clause.Eq{Column: clause.Column{Name: "state"}, Value: "queued"}
		set := map[string]any{"state": "running"}
		tx := begin(t, ctx, tg.DB)
		mine, err := lockplugin.Claim[i13BenchJob](ctx, tx, 2, queued, set)
		if refusedClaim(t, tg, err) {
			tx.Rollback()
			return
		}
		if err != nil || len(mine) != 2 {
			t.Fatalf("claim in the transaction: %d rows, %v", len(mine), err)
		}
		if !tg.Is(dialects.SQLite) {
			other, err := lockplugin.Claim[i13BenchJob](ctx, tg.DB, 10, queued, set)
			if err != nil || len(other) != 1 || other[0].ID == mine[0].ID || other[0].ID == mine[1].ID {
				t.Fatalf("another claim while the transaction is open: %+v, %v; want only the third job", other, err)
			}
		}
		if err := tx.Rollback().Error; err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := tg.DB.Model(&i13BenchJob{}).Where("state = ?", "queued").Where("id IN ?", []int64{mine[0].ID, mine[1].ID}).Count(&n).Error; err != nil || n != 2 {
			t.Fatalf("after the rollback %d of the 2 jobs are queued again, %v", n, err)
		}
	})
}

// refusedClaim reports whether Claim was refused, as it must be before any
// SQL on a database the matrix says cannot claim (TiDB ignores SKIP LOCKED).
func refusedClaim(t *testing.T, tg *testdb.Target, err error) bool {
	t.Helper()
	if tg.Dialect.Supports(dialects.QueueClaim) {
		return false
	}
	if !errors.Is(err, lockplugin.ErrUnsupported) {
		t.Fatalf("Claim on %s: %v, want ErrUnsupported", tg.Name, err)
	}
	t.Logf("refused on %s, as documented: %v", tg.Name, err)
	return true
}
