package main

import (
	"strings"
	"testing"
)

func TestMedians(t *testing.T) {
	out := `pkg: github.com/lockplugin/lockplugin/tests/x
BenchmarkA/pg/lockplugin-2   100   300 ns/op   2 stmts/op
BenchmarkA/pg/lockplugin-2   100   100 ns/op   2 stmts/op
BenchmarkA/pg/lockplugin-2   100   200 ns/op   2 stmts/op
BenchmarkA/pg/baseline=raw-sql-2   100   150 ns/op
BenchmarkA/pg/baseline=raw-sql-2   100   250 ns/op
`
	run, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	got := Medians(run.Results)
	if len(got) != 2 {
		t.Fatalf("%d results, want 2: %+v", len(got), got)
	}
	if v, _ := got[0].Metric("ns/op"); v != 200 || got[0].N != 300 {
		t.Errorf("lockplugin: median %v ns/op over %d iterations, want 200 over 300", v, got[0].N)
	}
	if v, _ := got[0].Metric("stmts/op"); v != 2 {
		t.Errorf("stmts/op %v, want 2", v)
	}
	if v, _ := got[1].Metric("ns/op"); v != 200 {
		t.Errorf("baseline: median %v ns/op, want 200 (the mean of the middle two)", v)
	}
}

// TestRoundRatios: a pair's ratio is the median of the rounds' ratios,
// not the ratio of the medians: in round 2 the machine was slow for both
// sides, which the per-round ratio cancels.
func TestRoundRatios(t *testing.T) {
	out := `# benchreport round 1
pkg: github.com/lockplugin/lockplugin/tests/x
BenchmarkA/pg/lockplugin-2   100   110 ns/op
BenchmarkA/pg/baseline=raw-sql-2   100   100 ns/op
# benchreport round 2
pkg: github.com/lockplugin/lockplugin/tests/x
BenchmarkA/pg/lockplugin-2   100   1200 ns/op
BenchmarkA/pg/baseline=raw-sql-2   100   1000 ns/op
# benchreport round 3
pkg: github.com/lockplugin/lockplugin/tests/x
BenchmarkA/pg/lockplugin-2   100   130 ns/op
BenchmarkA/pg/baseline=raw-sql-2   100   100 ns/op
BenchmarkB/pg/lockplugin-2   100   130 ns/op
`
	run, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if r := run.Results[2].Round; r != 2 {
		t.Fatalf("third result in round %d, want 2", r)
	}
	pairs, _ := PairUp(Medians(run.Results))
	WithRoundRatios(pairs, run.Results)
	if len(pairs) != 2 {
		t.Fatalf("%d pairs, want 2", len(pairs))
	}
	if got := pairs[0].RoundRatios; len(got) != 3 || got[0] != 1.1 || got[1] != 1.2 || got[2] != 1.3 {
		t.Errorf("round ratios %v, want [1.1 1.2 1.3]", got)
	}
	if r, ok := pairs[0].Ratio(); !ok || r != 1.2 {
		t.Errorf("ratio %v %v, want the median round's 1.2 (the medians' ratio is 1.3)", r, ok)
	}
	if _, ok := pairs[1].Ratio(); ok || len(pairs[1].RoundRatios) != 0 {
		t.Errorf("a variant without a baseline has a ratio: %+v", pairs[1])
	}
}
