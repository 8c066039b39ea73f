package lease

import (
	"testing"
	"time"
)

// simulateRefreshes counts, per window, the refreshes of n leases taken
// at time 0 and refreshed on the schedule first/next until end, on a
// virtual clock: the schedule alone, free of the machine's load.
func simulateRefreshes(n int, end, window time.Duration, first, next func() time.Duration) []int {
	counts := make([]int, end/window)
	for range n {
		for at := first(); at < end; at += next() {
			counts[at/window]++
		}
	}
	return counts
}

// spread reports the largest and smallest window count against the mean,
// the smallest over the windows from skip on.
func spread(counts []int, skip int) (maxRatio, minRatio, mean float64) {
	total := 0
	for _, c := range counts {
		total += c
	}
	mean = float64(total) / float64(len(counts))
	minRatio = 1e9
	for i, c := range counts {
		maxRatio = max(maxRatio, float64(c)/mean)
		if i >= skip {
			minRatio = min(minRatio, float64(c)/mean)
		}
	}
	return maxRatio, minRatio, mean
}

// TestRefreshScheduleSpreads: 10k leases taken at once with KeepAlive(5s),
// over 60 s in 1 s windows. Without jitter (the baseline) all 10k
// refreshes land in one window of every five; with KeepAlive's schedule
// every window is within 2x of the mean, and after the first interval no
// window has under half of it.
func TestRefreshScheduleSpreads(t *testing.T) {
	const n, interval, end, window = 10000, 5 * time.Second, 60 * time.Second, time.Second
	fixed := func() time.Duration { return interval }
	base := simulateRefreshes(n, end, window, fixed, fixed)
	bMax, _, bMean := spread(base, 0)
	t.Logf("no jitter: per window %v (mean %.0f, max %.1fx)", base, bMean, bMax)
	if bMax <= 2 {
		t.Fatalf("baseline without jitter: max %.1fx the mean; the check cannot tell", bMax)
	}
	for run := range 10 {
		counts := simulateRefreshes(n, end, window,
			func() time.Duration { return firstRefresh(interval) },
			func() time.Duration { return nextRefresh(interval) })
		hi, lo, mean := spread(counts, 0)
		if run == 0 {
			t.Logf("KeepAlive's schedule: per window %v (mean %.0f, max %.2fx, min %.2fx)", counts, mean, hi, lo)
		}
		if hi > 2 || lo < 0.5 {
			t.Errorf("run %d: per window %v: max %.2fx, min %.2fx the mean %.0f, want within 2x", run, counts, hi, lo, mean)
		}
	}
}

// TestRefreshNeverLate: no drawn delay exceeds the interval (the jitter is
// taken early, out of nothing the safety margin needs) nor falls under
// its floor.
func TestRefreshNeverLate(t *testing.T) {
	for _, interval := range []time.Duration{time.Nanosecond, 3, time.Millisecond, 10 * time.Second} {
		for range 10000 {
			if d := firstRefresh(interval); d > interval || d < 0 {
				t.Fatalf("firstRefresh(%v) = %v", interval, d)
			}
			if d := nextRefresh(interval); d > interval || d < interval-interval/4 {
				t.Fatalf("nextRefresh(%v) = %v", interval, d)
			}
		}
	}
}
