package advisory_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestTiDBMutualExclusion attacks advisory locks on TiDB where its
// GET_LOCK differs from MySQL's: 8 workers on one name behind a barrier,
// each entering the critical section 15 times with an indefinite wait (so
// waits queue and TiDB's 1105 retry limit is met), 5 with WaitAtMost(0)
// tries and 5 with a 2 s wait. Each counts the workers inside at once. The
// unprotected baseline (the same section, no lock) must overlap, so the
// test can fail; with the lock, 0 overlaps, in each of 3 runs.
func TestTiDBMutualExclusion(t *testing.T) {
	tg := testdb.Get(t, testdb.TiDB)
	if !tg.Dialect.Supports(dialects.AdvisoryLock) {
		err := advisory.With(context.Background(), tg.DB, lockName(t), notRun(t))
		if !errors.Is(err, lockplugin.ErrUnsupported) {
			t.Fatalf("err = %v, want ErrUnsupported", err)
		}
		t.Logf("refused on %s, as documented", tg.Name)
		return
	}
	const workers, each = 8, 25
	run := func(locked bool, name string) (overlaps, entered, busy int64) {
		var inside, over, in, refused atomic.Int64
		section := func(*gorm.DB) error {
			if inside.Add(1) > 1 {
				over.Add(1)
			}
			in.Add(1)
			time.Sleep(time.Duration(200+rand.N(800)) * time.Microsecond)
			inside.Add(-1)
			return nil
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range each {
					if !locked {
						_ = section(nil)
						continue
					}
					var opts []advisory.Option
					switch {
					case i%5 == 1:
						opts = append(opts, advisory.WaitAtMost(0))
					case i%5 == 3:
						opts = append(opts, advisory.WaitAtMost(2*time.Second))
					}
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					err := advisory.With(ctx, tg.DB, name, section, opts...)
					cancel()
					switch {
					case errors.Is(err, advisory.ErrTimeout):
						refused.Add(1)
					case err != nil:
						t.Errorf("worker %d, round %d: %v", w, i, err)
						return
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		return over.Load(), in.Load(), refused.Load()
	}
	base, n, _ := run(false, "")
	t.Logf("unprotected: %d overlaps in %d entries", base, n)
	if base == 0 {
		t.Fatal("the unprotected baseline did not overlap: the test could not fail")
	}
	for r := 1; r <= 3; r++ {
		start := time.Now()
		over, n, busy := run(true, lockName(t))
		t.Logf("advisory lock, run %d: %d overlaps in %d entries, %d tries or waits answered busy, %v", r, over, n, busy, time.Since(start))
		if over != 0 {
			t.Fatalf("run %d: %d overlaps under the lock", r, over)
		}
	}
}
