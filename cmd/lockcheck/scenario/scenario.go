// Package scenario holds the concurrency scenarios that both the
// conformance tests and the lockcheck command run: one source of truth for
// "N goroutines behind a barrier try to break a guarantee".
//
// A scenario returns a Result saying what was expected, what was observed
// and whether the guarantee held. The unprotected baselines are expected to
// lose (Baseline is true); the tests use them to prove that the scenario can
// fail at all.
package scenario

import (
	"fmt"
	"sync"
	"time"
)

// Config sizes a scenario run.
type Config struct {
	// Workers is the number of goroutines released together.
	Workers int
	// Rounds is how many times each worker repeats its operation (or how
	// many races a race scenario runs).
	Rounds int
	// Prefix starts the name of every table, advisory lock and key the
	// scenario creates, so that test packages running in parallel against
	// one server never share them. Default "lockcheck".
	Prefix string
}

// Defaults fills zero fields: 8 workers, 25 rounds, prefix "lockcheck".
func (c Config) Defaults() Config {
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.Rounds <= 0 {
		c.Rounds = 25
	}
	if c.Prefix == "" {
		c.Prefix = "lockcheck"
	}
	return c
}

// Result is the outcome of one scenario run.
type Result struct {
	// Scenario names the scenario, e.g. "lost update / FOR UPDATE".
	Scenario string `json:"scenario"`
	// Expected says what the guarantee promises, e.g. "0 lost updates".
	Expected string `json:"expected"`
	// Observed says what happened, e.g. "0 lost of 200".
	Observed string `json:"observed"`
	// OK is true when the guarantee held (for a baseline: whatever happened,
	// since a baseline promises nothing).
	OK bool `json:"ok"`
	// Baseline marks an unprotected variant, shown for comparison.
	Baseline bool `json:"baseline,omitempty"`
	// Unsupported, when not empty, says why the database cannot run the
	// mechanism; the scenario did not run and that is not a failure.
	Unsupported string `json:"unsupported,omitempty"`
	// Lost counts the violations observed (lost updates, double claims,
	// oversold slots, overlapping holders).
	Lost int `json:"lost"`
	// Ops is the number of successful operations.
	Ops int `json:"ops"`
	// Elapsed is the wall time of the concurrent part.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// OpsPerSecond is Ops over Elapsed.
func (r Result) OpsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// Verdict is "ok", "VIOLATED", "baseline" or "not supported here".
func (r Result) Verdict() string {
	switch {
	case r.Unsupported != "":
		return "not supported here"
	case r.Baseline:
		return "baseline"
	case r.OK:
		return "ok"
	}
	return "VIOLATED"
}

// Race runs fn(worker) on n goroutines released together by one barrier,
// waits for all of them, and returns the errors they returned (nil entries
// for success) and the wall time from release to the last return.
func Race(n int, fn func(worker int) error) ([]error, time.Duration) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, n)
	ready.Add(n)
	done.Add(n)
	for w := 0; w < n; w++ {
		go func(w int) {
			defer done.Done()
			defer func() {
				if p := recover(); p != nil {
					errs[w] = fmt.Errorf("scenario: worker %d panicked: %v", w, p)
				}
			}()
			ready.Done()
			<-start
			errs[w] = fn(w)
		}(w)
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	return errs, time.Since(t0)
}

// FirstError returns the first non-nil error of errs.
func FirstError(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
