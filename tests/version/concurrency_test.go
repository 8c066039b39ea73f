package version_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/require"
)

// PlainCounter has no version: the unprotected baseline.
type PlainCounter struct {
	ID uint
	N  int
}

func (PlainCounter) TableName() string { return "ver_plain_counters" }

// unprotected runs workers×rounds read-modify-write increments of one
// counter without a version, and returns how many were lost. It is the same
// read, add one, Save that LostUpdateVersion runs, minus the version.
func unprotected(ctx context.Context, t *testing.T, tg *testdb.Target, workers, rounds int) (lost, total int) {
	t.Helper()
	db := tg.DB.WithContext(ctx)
	tg.Reset(t, &PlainCounter{})
	c := PlainCounter{}
	require.NoError(t, db.Create(&c).Error)
	var ops atomic.Int64
	errs, _ := scenario.Race(workers, func(int) error {
		for i := 0; i < rounds; i++ {
			var cur PlainCounter
			if err := db.First(&cur, c.ID).Error; err != nil {
				return err
			}
			cur.N++
			if err := db.Save(&cur).Error; err != nil {
				return err
			}
			ops.Add(1)
		}
		return nil
	})
	require.NoError(t, scenario.FirstError(errs))
	var final PlainCounter
	require.NoError(t, db.First(&final, c.ID).Error)
	return int(ops.Load()) - final.N, int(ops.Load())
}

// 8 goroutines increment one counter 25 times each. Without a version,
// increments are lost; with the version and RetryOnConflict the counter
// ends at exactly 200.
func TestLostUpdate(t *testing.T) {
	const workers, rounds = 8, 25
	eachTarget(t, func(t *testing.T, tg *testdb.Target) {
		ctx := ctxOf(t)

		// The baseline must be able to lose: repeat it a few times, since
		// a lucky schedule may serialise every read-modify-write.
		lost, total := 0, 0
		for try := 0; try < 5 && lost == 0; try++ {
			lost, total = unprotected(ctx, t, tg, workers, rounds)
		}
		t.Logf("%s without version: %d of %d increments lost", tg.Name, lost, total)
		if lost == 0 {
			t.Fatalf("the unprotected baseline lost no increment in 5 runs: this test cannot show the version working")
		}

		cfg := scenario.Config{Workers: workers, Rounds: rounds, Prefix: "ver_" + sanitize(t.Name())}
		res, err := scenario.LostUpdateVersion(ctx, tg.DB, cfg)
		require.NoError(t, err)
		t.Logf("%s with version: %s in %v", tg.Name, res.Observed, res.Elapsed)
		if !res.OK || res.Lost != 0 || res.Ops != workers*rounds {
			t.Fatalf("version + RetryOnConflict: %s (ops %d)", res.Observed, res.Ops)
		}
		require.NoError(t, tg.DB.Migrator().DropTable(cfg.Prefix+"_vcounters"))
	})
}

// With deferred transactions SQLite lets both writers read and then
// refuses the second one's write with SQLITE_BUSY (its snapshot is stale):
// RetryOnConflict retries that too, and nothing is lost.
func TestLostUpdateSQLiteDeferred(t *testing.T) {
	tg := testdb.Open(t, testdb.SQLite, func(dsn string) string {
		return strings.Replace(dsn, "_txlock=immediate", "_txlock=deferred", 1)
	})
	cfg := scenario.Config{Workers: 8, Rounds: 25, Prefix: "ver_deferred"}
	res, err := scenario.LostUpdateVersion(ctxOf(t), tg.DB, cfg)
	require.NoError(t, err)
	t.Logf("sqlite (deferred) with version: %s in %v", res.Observed, res.Elapsed)
	if !res.OK {
		t.Fatalf("version + RetryOnConflict: %s", res.Observed)
	}
	require.NoError(t, tg.DB.Migrator().DropTable(cfg.Prefix+"_vcounters"))
}

func sanitize(name string) string {
	out := make([]byte, 0, len(name))
	for i := 0; i < len(name) && len(out) < 30; i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			out = append(out, c)
		case c >= 'A' && c <= 'Z':
			out = append(out, c+'a'-'A')
		default:
			out = append(out, '_')
		}
	}
	return string(out)
}
