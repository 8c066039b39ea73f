package lease_test

import (
	"context"
	"sync"
	"time"
)

// hotNameRecord is what hotName saw: every acquisition's wait,
// acquisitions per worker, waits that ran out, and other errors.
type hotNameRecord struct {
	waits     []time.Duration
	perWorker []int
	ranOut    int
	failed    int
}

// hotName has workers goroutines take one name in turn until run has
// passed: each take waits at most wait (its context's deadline), hold is
// called with the fence while the name is held (it holds it: sleeps,
// records), then the name is released. After a failed take a worker
// pauses for pause before it tries again.
func hotName(workers int, run, wait, pause time.Duration,
	take func(ctx context.Context, w int) (fence int64, release func(), err error),
	hold func(fence int64)) *hotNameRecord {
	r := &hotNameRecord{perWorker: make([]int, workers)}
	var mu sync.Mutex
	end := time.Now().Add(run)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				fence, release, err := take(ctx, w)
				waited := time.Since(start)
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					r.waits = append(r.waits, waited)
					r.perWorker[w]++
				case waited >= wait:
					r.ranOut++
				default:
					r.failed++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(pause)
					continue
				}
				hold(fence)
				release()
			}
		}()
	}
	wg.Wait()
	return r
}
