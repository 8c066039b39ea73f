package lease

import (
	"math"
	"math/rand/v2"
	"time"
)

// KeepAlive's refresh schedule. Refreshes are drawn early, never late, so
// the jitter cannot eat into the safety margin: a lease is refreshed at
// the latest at its KeepAlive interval, as without jitter. Without it, a
// process that takes many leases at once (10k at start-up) refreshes them
// all in the same instant of every interval, a synchronized wave on the
// store; with it they spread evenly over the interval and stay spread.

// firstRefresh is the delay before a lease's first refresh, drawn so that
// leases taken together refresh at a steady rate from the start: the
// time to the next refresh of a lease refreshed on nextRefresh's schedule
// since long ago (uniform over [0, 3*interval/4] with probability 6/7,
// else falling linearly over the last quarter). A lease may thus be
// refreshed soon after it was taken: one early call, once.
func firstRefresh(interval time.Duration) time.Duration {
	q := interval / 4
	if rand.N(7) < 6 {
		return rand.N(3*q + 1)
	}
	return 3*q + time.Duration(float64(interval-3*q)*(1-math.Sqrt(rand.Float64())))
}

// nextRefresh is the delay between two refreshes: uniform in
// [3*interval/4, interval]; independent draws keep the spread.
func nextRefresh(interval time.Duration) time.Duration {
	return interval - rand.N(interval/4+1)
}
