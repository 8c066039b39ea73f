package fence_test

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
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestI16FencedWriteRace: 8 writers behind a barrier, each taking
// successive fences from one counter (as successive holders of a lease
// do), pausing at random, then writing one row with its fence. An
// observer reads the row all the while. Fenced, the row's fence never goes
// down (a write under an older fence never lands after a newer one's) and
// the final fence is the greatest that was written; unfenced (the
// baseline: the same writes setting the column, without the guard) the
// fence goes down.
func TestI16FencedWriteRace(t *testing.T) {
	const workers, each = 8, 40
	ctx := context.Background()
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if refusedOnTiDB(t, tg) {
			return
		}
		tg.Reset(t, &account{})
		// A pause long enough to reorder the writes: TiDB's writes take
		// milliseconds, and queue on the row in the order they were sent.
		pause := time.Millisecond
		if tg.Dialect.Engine == dialects.TiDB {
			pause = 10 * time.Millisecond
		}
		// Fenced writes both inside GORM's default transaction and as
		// autocommit statements (SkipDefaultTransaction), which TiDB
		// retries after a write conflict.
		for _, mode := range []string{"unfenced", "fenced", "fenced, autocommit"} {
			fenced := mode != "unfenced"
			db := tg.DB
			if mode == "fenced, autocommit" {
				db = tg.DB.Session(&gorm.Session{SkipDefaultTransaction: true})
			}
			// The invariants hold on every attempt; an attempt in which no
			// write happened to be stale proves nothing and is run again.
			const attempts = 5
			for attempt := 1; ; attempt++ {
				noErr(t, tg.DB.Exec("DELETE FROM i16_accounts").Error)
				noErr(t, tg.DB.Create(&account{ID: 1}).Error)
				var next, maxOK, refused, decreases, unreported atomic.Int64
				stop := make(chan struct{})
				var obs sync.WaitGroup
				obs.Add(1)
				go func() { // the observer
					defer obs.Done()
					var last int64
					for {
						select {
						case <-stop:
							return
						default:
						}
						var r account
						if tg.DB.First(&r, 1).Error == nil {
							if int64(r.Fence) < last {
								decreases.Add(1)
							}
							last = max(last, int64(r.Fence))
						}
					}
				}()
				start := make(chan struct{})
				var wg sync.WaitGroup
				errs := make(chan error, workers)
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						for range each {
							f := next.Add(1)
							time.Sleep(rand.N(pause)) // a pause
							// A write sent after a greater fence's write was
							// reported done must meet it and be refused: one
							// reported done instead is a stale write that went
							// unreported (or a report that lied).
							seen := maxOK.Load()
							var err error
							if fenced {
								err = db.WithContext(lockplugin.WithFence(ctx, token(f))).Model(&account{ID: 1}).Update("balance", f).Error
							} else {
								err = tg.DB.Model(&account{ID: 1}).Updates(map[string]any{"balance": f, "fence": f}).Error
							}
							switch {
							case errors.Is(err, lockplugin.ErrStaleFence):
								refused.Add(1)
							case err != nil:
								errs <- err
								return
							default:
								if seen > f {
									unreported.Add(1)
								}
								for {
									m := maxOK.Load()
									if f <= m || maxOK.CompareAndSwap(m, f) {
										break
									}
								}
							}
						}
					}()
				}
				close(start)
				wg.Wait()
				close(stop)
				obs.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				var final account
				noErr(t, tg.DB.First(&final, 1).Error)
				t.Logf("%s %s: %d writes, %d refused as stale, %d stale reported done, fence went down %d times while observed, final fence %d (greatest written %d)",
					tg.Name, mode, workers*each, refused.Load(), unreported.Load(), decreases.Load(), final.Fence, maxOK.Load())
				if fenced {
					want(t, decreases.Load() == 0, "the fence went down %d times", decreases.Load())
					want(t, int64(final.Fence) == maxOK.Load() && final.Balance == maxOK.Load(), "final %+v, greatest written %d", final, maxOK.Load())
					want(t, unreported.Load() == 0, "%d stale writes were reported done", unreported.Load())
					if refused.Load() == 0 && attempt < attempts {
						continue // the writes happened not to reorder (a loaded machine): again
					}
					want(t, refused.Load() > 0, "no write was stale in %d attempts: the race did not happen", attempt)
				} else {
					want(t, decreases.Load() > 0 || int64(final.Fence) != int64(workers*each), "the unfenced baseline must go down")
				}
				break
			}
		}
	})
}
