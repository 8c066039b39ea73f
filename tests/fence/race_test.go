package fence_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin"
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
		for _, fenced := range []bool{false, true} {
			noErr(t, tg.DB.Exec("DELETE FROM i16_accounts").Error)
			noErr(t, tg.DB.Create(&account{ID: 1}).Error)
			var next, maxOK, refused, decreases atomic.Int64
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
						time.Sleep(time.Duration(rand.N(1000)) * time.Microsecond) // a pause
						var err error
						if fenced {
							err = tg.DB.WithContext(lockplugin.WithFence(ctx, token(f))).Model(&account{ID: 1}).Update("balance", f).Error
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
			t.Logf("%s fenced=%v: %d writes, %d refused as stale, fence went down %d times while observed, final fence %d (greatest written %d)",
				tg.Name, fenced, workers*each, refused.Load(), decreases.Load(), final.Fence, maxOK.Load())
			if fenced {
				want(t, decreases.Load() == 0, "the fence went down %d times", decreases.Load())
				want(t, int64(final.Fence) == maxOK.Load() && final.Balance == maxOK.Load(), "final %+v, greatest written %d", final, maxOK.Load())
				want(t, refused.Load() > 0, "no write was stale: the race did not happen")
			} else {
				want(t, decreases.Load() > 0 || int64(final.Fence) != int64(workers*each), "the unfenced baseline must go down")
			}
		}
	})
}
