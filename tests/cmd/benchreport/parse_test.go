package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// canned is `go test -run '^$' -bench . -benchmem ./...` output over three
// packages, with the things real runs print in between: a skipped
// sub-benchmark with its reason, a benchmark whose own output separates its
// name from its figures, a custom metric, a benchmark without a pair, and a
// failed package.
const canned = `goos: linux
goarch: amd64
pkg: github.com/lockplugin/lockplugin/tests/advisory
cpu: AMD EPYC 7B13
BenchmarkWith/postgres/lockplugin-2         	    5000	    241300 ns/op	    2.000 stmts/op	    1840 B/op	      38 allocs/op
BenchmarkWith/postgres/baseline=raw-sql-2   	    6000	    201100 ns/op	    2.000 stmts/op	    1500 B/op	      30 allocs/op
BenchmarkWith/mariadb/lockplugin-2          	    3000	    401000 ns/op	    1712 B/op	      35 allocs/op
BenchmarkWith/mariadb/baseline=raw-sql-2    	    3000	    400000 ns/op	    1650 B/op	      33 allocs/op
--- SKIP: BenchmarkWith/sqlserver
    bench_test.go:41: testdb: sqlserver not reachable, skipping: LOCKPLUGIN_SQLSERVER_DSN is not set
PASS
ok  	github.com/lockplugin/lockplugin/tests/advisory	12.001s
goos: linux
goarch: amd64
pkg: github.com/lockplugin/lockplugin/tests/lease
cpu: AMD EPYC 7B13
BenchmarkAcquireRelease/redis/lockplugin-2  	redis: 2026/01/01 pool.go:1: chatter
   20000	     55000 ns/op	     18000 acq/s	     900 B/op	      20 allocs/op
BenchmarkAcquireRelease/redis/baseline=redislock-2         	   25000	     44000 ns/op	     22000 acq/s	     800 B/op	      18 allocs/op
BenchmarkAcquireRelease/redis/baseline=raw-set-nx-2        	   30000	     40000 ns/op	     900 B/op	      15 allocs/op
BenchmarkAcquireRelease/sqlite/lockplugin-2 	    1000	   1200000 ns/op	     896 B/op	      21 allocs/op
BenchmarkManagerOverhead-2                  	 1000000	      1052 ns/op	      64 B/op	       2 allocs/op
PASS
ok  	github.com/lockplugin/lockplugin/tests/lease	9.100s
goos: linux
goarch: amd64
pkg: github.com/lockplugin/lockplugin/tests/holds
cpu: AMD EPYC 7B13
BenchmarkAcquire/postgres/baseline=count-then-insert-2	    2000	    600000 ns/op
--- FAIL: BenchmarkAcquire/postgres/lockplugin
    bench_test.go:77: holds: boom
FAIL
exit status 1
FAIL	github.com/lockplugin/lockplugin/tests/holds	3.000s
`

func TestParse(t *testing.T) {
	run, err := Parse(strings.NewReader(canned))
	if err != nil {
		t.Fatal(err)
	}
	if run.GOOS != "linux" || run.GOARCH != "amd64" || run.CPU != "AMD EPYC 7B13" || len(run.Packages) != 3 {
		t.Errorf("header: %q %q %q %v", run.GOOS, run.GOARCH, run.CPU, run.Packages)
	}
	if len(run.Results) != 10 {
		t.Fatalf("%d results, want 10: %+v", len(run.Results), run.Results)
	}
	first := run.Results[0]
	if first.Pkg != "github.com/lockplugin/lockplugin/tests/advisory" || first.Name != "BenchmarkWith/postgres/lockplugin" ||
		first.Procs != 2 || first.N != 5000 || len(first.Metrics) != 4 {
		t.Errorf("first result %+v", first)
	}
	if v, ok := first.Metric("stmts/op"); !ok || v != 2 {
		t.Errorf("stmts/op = %v %v", v, ok)
	}
	// The name and the figures were split by the benchmark's own output.
	split := run.Results[4]
	if split.Name != "BenchmarkAcquireRelease/redis/lockplugin" || split.N != 20000 {
		t.Errorf("split result %+v", split)
	}
	if v, _ := split.Metric("acq/s"); v != 18000 {
		t.Errorf("acq/s = %v", v)
	}
	if len(run.Skipped) != 1 || run.Skipped[0].Name != "BenchmarkWith/sqlserver" ||
		run.Skipped[0].Reason != "testdb: sqlserver not reachable, skipping: LOCKPLUGIN_SQLSERVER_DSN is not set" {
		t.Errorf("skipped %+v", run.Skipped)
	}
	if len(run.Failed) != 2 || run.Failed[0].Name != "BenchmarkAcquire/postgres/lockplugin" || run.Failed[0].Reason != "holds: boom" ||
		run.Failed[1].Pkg != "github.com/lockplugin/lockplugin/tests/holds" {
		t.Errorf("failed %+v", run.Failed)
	}
}

func TestPairUp(t *testing.T) {
	run, err := Parse(strings.NewReader(canned))
	if err != nil {
		t.Fatal(err)
	}
	pairs, others := PairUp(run.Results)
	type row struct{ bench, db, baseline string }
	var got []row
	for _, p := range pairs {
		got = append(got, row{p.Benchmark, p.Database, p.BaselineName})
	}
	want := []row{
		{"BenchmarkWith", "postgres", "raw-sql"},
		{"BenchmarkWith", "mariadb", "raw-sql"},
		{"BenchmarkAcquireRelease", "redis", "redislock"},
		{"BenchmarkAcquireRelease", "redis", "raw-set-nx"},
		{"BenchmarkAcquireRelease", "sqlite", ""},
		{"BenchmarkAcquire", "postgres", "count-then-insert"},
	}
	if len(got) != len(want) {
		t.Fatalf("pairs %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pair %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if r, ok := pairs[0].Ratio(); !ok || r < 1.199 || r > 1.2 {
		t.Errorf("ratio %v %v, want 241300/201100", r, ok)
	}
	if pairs[2].Plugin != pairs[3].Plugin || pairs[2].Plugin == nil {
		t.Error("both Redis baselines should pair with the one lockplugin leaf")
	}
	if _, ok := pairs[4].Ratio(); ok {
		t.Error("a leaf without a baseline has no ratio")
	}
	if pairs[5].Plugin != nil {
		t.Error("the failed lockplugin leaf has no figures")
	}
	if len(others) != 1 || others[0].Name != "BenchmarkManagerOverhead" {
		t.Errorf("others %+v", others)
	}
}

func TestRender(t *testing.T) {
	run, err := Parse(strings.NewReader(canned))
	if err != nil {
		t.Fatal(err)
	}
	h := Header{
		Date:      time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC),
		Machine:   Machine{GoVersion: "go1.26.8", GOOS: "linux", GOARCH: "amd64", CPU: "AMD EPYC 7B13", NumCPU: 2, LoadStart: "2.10 1.50 0.90", LoadEnd: "3.00 2.20 1.10"},
		Reproduce: "make bench",
		Command:   "go test -run '^$' -bench . -benchmem -benchtime 1s -p 1 -timeout 60m ./...",
	}
	var b bytes.Buffer
	if err := Render(&b, h, run); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Reproduce: `make bench`",
		"| date | 2026-01-02 03:04 UTC |",
		"| Go | go1.26.8 linux/amd64 |",
		"| CPU | AMD EPYC 7B13 |",
		"| logical CPUs | 2 |",
		"| load average (1, 5, 15 min) | 2.10 1.50 0.90 at the start, 3.00 2.20 1.10 at the end |",
		"## tests/advisory\n",
		"| BenchmarkWith | postgres | 241 µs/op, 2 stmts/op, 1840 B/op, 38 allocs/op | raw-sql | 201 µs/op, 2 stmts/op, 1500 B/op, 30 allocs/op | 1.20× |",
		"| BenchmarkAcquireRelease | redis | 55 µs/op, 18000 acq/s, 900 B/op, 20 allocs/op | redislock | 44 µs/op, 22000 acq/s, 800 B/op, 18 allocs/op | 1.25× |",
		"| BenchmarkAcquireRelease | sqlite | 1.2 ms/op, 896 B/op, 21 allocs/op | - | - | - |",
		"| BenchmarkAcquire | postgres | - | count-then-insert | 600 µs/op | - |",
		"| tests/lease | BenchmarkManagerOverhead | 1.05 µs/op, 64 B/op, 2 allocs/op |",
		"| tests/advisory | BenchmarkWith/sqlserver | testdb: sqlserver not reachable, skipping: LOCKPLUGIN_SQLSERVER_DSN is not set |",
		"| tests/holds | BenchmarkAcquire/postgres/lockplugin | holds: boom |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// Sections in package order, each once.
	if strings.Index(out, "## tests/advisory") > strings.Index(out, "## tests/holds") ||
		strings.Index(out, "## tests/holds") > strings.Index(out, "## tests/lease") {
		t.Errorf("sections out of order:\n%s", out)
	}
}

func TestNumber(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 2: "2", 2.5: "2.5", 12.34: "12.3", 123.4: "123", 0.126: "0.13", 0.001234: "0.00123", 1052: "1052"} {
		if got := number(v); got != want {
			t.Errorf("number(%v) = %q, want %q", v, got, want)
		}
	}
	for ns, want := range map[float64]string{950: "950 ns", 1052: "1.05 µs", 241300: "241 µs", 1.2e6: "1.2 ms", 3.5e9: "3.5 s"} {
		if got := duration(ns); got != want {
			t.Errorf("duration(%v) = %q, want %q", ns, got, want)
		}
	}
}

func TestCPUModel(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
	if got := cpuModel(info); got != "AMD EPYC 7B13" {
		t.Errorf("cpuModel = %q", got)
	}
}

// TestRunFromSavedOutput drives the command end to end on saved output:
// the file it writes, and exit status 1 because a benchmark failed.
func TestRunFromSavedOutput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bench.txt")
	if err := os.WriteFile(in, []byte(canned), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "BENCHMARKS.md")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-in", in, "-out", out, "-benchtime", "100x"}, &stdout, &stderr); code != 1 {
		t.Errorf("exit %d, want 1 for a failed benchmark; stderr %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Reproduce: `make bench BENCHTIME=100x`", "-benchtime 100x", "## tests/lease", "## Failed"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("BENCHMARKS.md lacks %q:\n%s", want, b)
		}
	}
	if code := run([]string{"-nosuch"}, &stdout, &stderr); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
}
