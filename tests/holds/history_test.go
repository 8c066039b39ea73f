package holds_test

// Holds on a lived-in table: a resource that has gathered many holds that
// expired without a Release (the TTL use case: abandoned carts, crashed
// clients). Their rows keep released_at NULL forever, so the count of
// active holds must skip them by the index range, not read and filter
// them. The tables of these tests start with "i26_".

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

const (
	histSeats = "i26_seats"
	histHolds = "i26_holds"
)

var histTable = holds.Table(histHolds)

// histSeat is the resource of the history tests.
type histSeat struct {
	ID       uint
	Capacity int
}

func (histSeat) TableName() string { return histSeats }

func (s histSeat) HoldCapacity() int { return s.Capacity }

// histSetup gives fresh i26_ tables and two seats: one to fill with
// history, one that has none.
func histSetup(t testing.TB, tg *testdb.Target, capacity int) (full, empty *histSeat) {
	t.Helper()
	tg.Reset(t, &histSeat{})
	require.NoError(t, tg.DB.Migrator().DropTable(histHolds))
	require.NoError(t, holds.Migrate(tg.DB, histTable))
	full, empty = &histSeat{Capacity: capacity}, &histSeat{Capacity: capacity}
	require.NoError(t, tg.DB.Create(full).Error)
	require.NoError(t, tg.DB.Create(empty).Error)
	return full, empty
}

// seedExpired inserts n holds on s, in the library's row format, that
// expired an hour ago and were never released, with one INSERT ... SELECT
// over a generated series.
func seedExpired(t testing.TB, tg *testdb.Target, s *histSeat, n int) {
	t.Helper()
	now := time.Now().UnixMilli()
	created, expires := now-2*3600_000, now-3600_000
	var series string
	if tg.Is(dialects.Postgres) {
		series = fmt.Sprintf("generate_series(1, %d) AS g", n)
	} else {
		// Digits cross-joined: no recursion limit (MySQL stops a recursive
		// CTE at 1000 rows by default).
		digits := "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 " +
			"UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
		var from []string
		for k := 1; k < n; k *= 10 {
			from = append(from, fmt.Sprintf("%s AS d%d", digits, len(from)))
		}
		series = strings.Join(from, " CROSS JOIN ")
	}
	q := fmt.Sprintf("INSERT INTO %s (resource_type, resource_id, holder, created_at, expires_at) "+
		"SELECT '%s', '%d', 'i26-expired', %d, %d FROM %s", histHolds, histSeats, s.ID, created, expires, series)
	if !tg.Is(dialects.Postgres) {
		q += fmt.Sprintf(" LIMIT %d", n)
	}
	start := time.Now()
	require.NoError(t, tg.DB.Exec(q).Error)
	var got int64
	require.NoError(t, tg.DB.Table(histHolds).Where("resource_id = ? AND holder = ?", fmt.Sprint(s.ID), "i26-expired").Count(&got).Error)
	require.EqualValues(t, n, got)
	if tg.Is(dialects.Postgres, dialects.MySQL, dialects.MariaDB) {
		// As autovacuum / InnoDB's persistent statistics would, in time.
		require.NoError(t, tg.DB.Exec("ANALYZE "+map[bool]string{true: "", false: "TABLE "}[tg.Is(dialects.Postgres)]+histHolds).Error)
	}
	t.Logf("%s: seeded %d expired holds in %v", tg.Name, n, time.Since(start).Round(time.Millisecond))
}

// cycle is one Acquire and Release on s.
func cycle(ctx context.Context, tg *testdb.Target, s *histSeat, holder string) error {
	h, err := holds.Acquire(ctx, tg.DB, s, holder, histTable, holds.TTL(time.Hour))
	if err != nil {
		return err
	}
	return h.Release(ctx)
}

// literal replaces the placeholders of a captured statement (?, ?n, $n)
// with the test's own constant arguments, so that it can be explained as
// the server planned it with those values.
func literal(q string, args ...string) string {
	seq := 0
	return regexp.MustCompile(`\?[0-9]*|\$[0-9]+`).ReplaceAllStringFunc(q, func(p string) string {
		i := seq
		if len(p) > 1 {
			fmt.Sscan(p[1:], &i)
			i--
		} else {
			seq++
		}
		return args[i]
	})
}

// rowsExamined is what the database read to run q: PostgreSQL's buffers
// (8 KB pages), MariaDB's rows read (r_rows), SQLite's plan (0 when every
// search of the holds table is bounded by expires_at, -1 otherwise).
func rowsExamined(t *testing.T, tg *testdb.Target, q string) (int64, string) {
	t.Helper()
	switch {
	case tg.Is(dialects.Postgres):
		var plan string
		tx := tg.DB.Begin() // EXPLAIN ANALYZE runs the grant's INSERT: roll it back
		defer tx.Rollback()
		require.NoError(t, tx.Raw("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+q).Row().Scan(&plan))
		var out []struct {
			Plan struct {
				Hit  int64 `json:"Shared Hit Blocks"`
				Read int64 `json:"Shared Read Blocks"`
			}
		}
		require.NoError(t, json.Unmarshal([]byte(plan), &out))
		return out[0].Plan.Hit + out[0].Plan.Read, plan
	case tg.Is(dialects.MariaDB):
		var plan string
		require.NoError(t, tg.DB.Raw("ANALYZE FORMAT=JSON "+q).Row().Scan(&plan))
		var n int64
		for _, m := range regexp.MustCompile(`"r_rows": ([0-9.]+)`).FindAllStringSubmatch(plan, -1) {
			var f float64
			fmt.Sscan(m[1], &f)
			n += int64(f)
		}
		return n, plan
	case tg.Is(dialects.SQLite):
		rows, err := tg.SQL.Query("EXPLAIN QUERY PLAN " + q)
		require.NoError(t, err)
		defer rows.Close()
		var lines []string
		bounded := true
		for rows.Next() {
			var id, parent, unused int
			var detail string
			require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
			lines = append(lines, detail)
			if strings.Contains(detail, histHolds) && !strings.Contains(detail, "expires_at") && !strings.Contains(detail, "PRIMARY KEY") {
				bounded = false
			}
		}
		require.NoError(t, rows.Err())
		if bounded {
			return 0, strings.Join(lines, "\n")
		}
		return -1, strings.Join(lines, "\n")
	}
	t.Skipf("%s: no plan reader", tg.Name)
	return 0, ""
}

// The count of a resource's active holds reads the active holds only: with
// 100k expired, unreleased holds on the resource, the statements Acquire
// and Available send (captured at the driver) read a handful of pages or
// rows. The baseline, the same statements with the clock compared per row
// as before (and on SQLite with the two ranges ORed), reads them all.
func TestHoldsCountSkipsExpiredHistory(t *testing.T) {
	for _, kind := range []string{testdb.SQLite, testdb.Postgres, testdb.MySQL} {
		t.Run(kind, func(t *testing.T) {
			tg := testdb.Get(t, kind)
			const n = 100_000
			full, _ := histSetup(t, tg, 3)
			seedExpired(t, tg, full, n)
			db, h := hooked(t, tg)
			var mu sync.Mutex
			var counts []string
			h.set(func(q string) string {
				if strings.Contains(q, histHolds) && strings.Contains(q, "resource_type =") && !strings.HasPrefix(q, "SELECT id FROM") {
					mu.Lock()
					counts = append(counts, q)
					mu.Unlock()
				}
				return q
			}, nil)
			ctx := context.Background()
			hd, err := holds.Acquire(ctx, db, full, "i26-probe", histTable)
			require.NoError(t, err)
			require.NoError(t, hd.Release(ctx))
			free, err := holds.Available(ctx, db, full, histTable)
			require.NoError(t, err)
			require.Equal(t, 3, free, "expired holds count as free slots")
			h.set(nil, nil)
			require.NotEmpty(t, counts)
			id := fmt.Sprint(full.ID)
			now := drivers.For(tg.Dialect).NowMillis()
			for _, q := range counts {
				var args []string
				switch {
				case strings.HasPrefix(q, "INSERT"): // PostgreSQL's grant
					args = []string{"'" + histSeats + "'", "'" + id + "'", "'i26-probe'", "NULL", "3"}
				case strings.Contains(q, "MIN(CASE"): // the count: holder, type, id
					args = []string{"'i26-probe'", "'" + histSeats + "'", "'" + id + "'"}
				default: // Available's count: type, id
					args = []string{"'" + histSeats + "'", "'" + id + "'"}
				}
				stmt := literal(q, args...)
				got, plan := rowsExamined(t, tg, stmt)
				// Baseline: the clock compared per row, one OR'd range.
				old := strings.ReplaceAll(stmt, "(SELECT "+now+")", now)
				if tg.Is(dialects.SQLite) {
					old = regexp.MustCompile(`id IN \(SELECT id FROM \S+ WHERE (.*?)expires_at IS NULL UNION ALL .*?expires_at > (.*?)\)\)`).
						ReplaceAllString(old, "${1}(expires_at IS NULL OR expires_at > $2))")
				}
				base, basePlan := rowsExamined(t, tg, old)
				t.Logf("%s: read %d with the index range, %d baseline\n%s", tg.Name, got, base, stmt)
				if tg.Is(dialects.SQLite) {
					require.Zero(t, got, "SQLite searches the holds without bounding expires_at:\n%s", plan)
					require.Equal(t, int64(-1), base, "the OR'd baseline should not bound expires_at:\n%s", basePlan)
					continue
				}
				require.Less(t, got, int64(100), "the count reads the expired history:\n%s", plan)
				if tg.Is(dialects.Postgres) {
					require.Greater(t, base, int64(300), "the per-row clock baseline should read the history:\n%s", basePlan)
				}
			}
		})
	}
}

// BenchmarkHoldsExpiredHistory: Acquire+Release on a resource with 100k
// expired, never released holds against one with none, in interleaved
// rounds; it reports the median of each and their ratio (history/empty,
// the bar is 1.5).
func BenchmarkHoldsExpiredHistory(b *testing.B) {
	for _, kind := range []string{testdb.SQLite, testdb.Postgres, testdb.MySQL} {
		b.Run(kind, func(b *testing.B) { benchHistory(b, testdb.Get(b, kind), 100_000) })
	}
}

// BenchmarkHoldsExpiredHistory1M is BenchmarkHoldsExpiredHistory with 1M
// expired holds, on PostgreSQL.
func BenchmarkHoldsExpiredHistory1M(b *testing.B) {
	benchHistory(b, testdb.Get(b, testdb.Postgres), 1_000_000)
}

// seeded keeps the seats benchHistory seeded, by database and size: the
// benchmark function runs more than once (b.N = 1 first), the seeding once.
var seeded = map[string][2]*histSeat{}

func benchHistory(b *testing.B, tg *testdb.Target, n int) {
	key := fmt.Sprint(tg.Name, n)
	seats, ok := seeded[key]
	if !ok {
		full, empty := histSetup(b, tg, 1<<20)
		seedExpired(b, tg, full, n)
		seats = [2]*histSeat{full, empty}
		seeded[key] = seats
	}
	full, empty := seats[0], seats[1]
	ctx := context.Background()
	for i := 0; i < 20; i++ { // warm the pool and the plan caches
		require.NoError(b, cycle(ctx, tg, full, "warm"))
		require.NoError(b, cycle(ctx, tg, empty, "warm"))
	}
	var withHist, without []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		order := []*histSeat{full, empty}
		if i%2 == 1 {
			order[0], order[1] = empty, full
		}
		for _, s := range order {
			start := time.Now()
			require.NoError(b, cycle(ctx, tg, s, fmt.Sprintf("b%d", i)))
			if s == full {
				withHist = append(withHist, time.Since(start))
			} else {
				without = append(without, time.Since(start))
			}
		}
	}
	b.StopTimer()
	h, e := median(withHist), median(without)
	b.ReportMetric(float64(h.Microseconds())/1000, "history-ms")
	b.ReportMetric(float64(e.Microseconds())/1000, "empty-ms")
	b.ReportMetric(float64(h)/float64(e), "ratio")
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
