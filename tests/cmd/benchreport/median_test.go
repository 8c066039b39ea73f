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
