package main

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Metric is one figure of a benchmark result line, e.g. 1234 "ns/op" or
// 2 "stmts/op".
type Metric struct {
	Value float64
	Unit  string
}

// Result is one benchmark result line of `go test -bench`.
type Result struct {
	// Pkg is the import path the result belongs to.
	Pkg string
	// Name is the benchmark's full name without the -GOMAXPROCS suffix,
	// e.g. "BenchmarkAcquire/postgres/lockplugin".
	Name string
	// Procs is the GOMAXPROCS suffix; 1 when there was none.
	Procs int
	// N is the number of iterations.
	N int64
	// Metrics are the figures in the order go test printed them.
	Metrics []Metric
	// Round is the round of benchreport's run the result came from (the
	// "# benchreport round N" line before it); 0 in output without rounds.
	Round int
}

// Metric returns the value for unit and whether the line reported it.
func (r Result) Metric(unit string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Unit == unit {
			return m.Value, true
		}
	}
	return 0, false
}

// Note is a skipped or failed benchmark or package, with go test's reason.
type Note struct {
	Pkg    string
	Name   string
	Reason string
}

// Run is everything one `go test -bench` run printed that the report uses.
type Run struct {
	// Results are the results; main folds repeated ones into their
	// medians (Medians) before rendering.
	Results []Result
	// Raw are the results before folding, for the per-round ratios; nil
	// when Results were not folded.
	Raw      []Result
	Skipped  []Note
	Failed   []Note
	GOOS     string
	GOARCH   string
	CPU      string
	Packages []string
}

// roundMarker starts the output of one round: benchreport writes it before
// each go test invocation it makes.
const roundMarker = "# benchreport round "

var (
	procsSuffix  = regexp.MustCompile(`-(\d+)$`)
	sourcePrefix = regexp.MustCompile(`^\S+\.go:\d+: `)
)

// Parse reads `go test -bench` output, for any number of packages. It
// tolerates the lines tests and benchmarks print in between, including a
// benchmark's name and figures separated by its own output.
func Parse(r io.Reader) (*Run, error) {
	run := &Run{}
	var pkg, pending string
	round := 0
	var note *Note // the SKIP or FAIL whose reason lines follow
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if note != nil {
			if strings.HasPrefix(line, "    ") && trimmed != "" {
				if note.Reason == "" {
					note.Reason = sourcePrefix.ReplaceAllString(trimmed, "")
				}
				continue
			}
			note = nil
		}
		switch {
		case strings.HasPrefix(line, roundMarker):
			if n, err := strconv.Atoi(strings.TrimPrefix(line, roundMarker)); err == nil {
				round = n
			}
			pending = ""
		case strings.HasPrefix(line, "goos: "):
			run.GOOS = strings.TrimPrefix(line, "goos: ")
		case strings.HasPrefix(line, "goarch: "):
			run.GOARCH = strings.TrimPrefix(line, "goarch: ")
		case strings.HasPrefix(line, "cpu: "):
			run.CPU = strings.TrimPrefix(line, "cpu: ")
		case strings.HasPrefix(line, "pkg: "):
			pkg = strings.TrimPrefix(line, "pkg: ")
			run.Packages = append(run.Packages, pkg)
			pending = ""
		case strings.HasPrefix(line, "--- SKIP: "), strings.HasPrefix(line, "--- FAIL: "):
			name, _, _ := strings.Cut(strings.TrimSpace(line[len("--- SKIP: "):]), " ")
			name = procsSuffix.ReplaceAllString(name, "")
			n := Note{Pkg: pkg, Name: name}
			if strings.HasPrefix(line, "--- SKIP: ") {
				run.Skipped = append(run.Skipped, n)
				note = &run.Skipped[len(run.Skipped)-1]
			} else {
				run.Failed = append(run.Failed, n)
				note = &run.Failed[len(run.Failed)-1]
			}
		case strings.HasPrefix(line, "FAIL\t"):
			f := strings.Fields(line)
			run.Failed = append(run.Failed, Note{Pkg: f[1], Reason: "package failed"})
		case strings.HasPrefix(line, "panic: "):
			run.Failed = append(run.Failed, Note{Pkg: pkg, Name: pending, Reason: trimmed})
		case strings.HasPrefix(line, "Benchmark"):
			f := strings.Fields(line)
			if res, ok := parseFigures(pkg, f[0], f[1:]); ok {
				res.Round = round
				run.Results = append(run.Results, res)
				pending = ""
			} else {
				// The name came first and the figures follow after whatever
				// the benchmark printed.
				pending = f[0]
			}
		case pending != "":
			if res, ok := parseFigures(pkg, pending, strings.Fields(line)); ok {
				res.Round = round
				run.Results = append(run.Results, res)
				pending = ""
			}
		}
	}
	return run, sc.Err()
}

// parseFigures reads "N value unit value unit ..." for the benchmark name.
func parseFigures(pkg, name string, f []string) (Result, bool) {
	if len(f) < 3 || len(f)%2 != 1 {
		return Result{}, false
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return Result{}, false
	}
	res := Result{Pkg: pkg, Name: name, Procs: 1, N: n}
	if m := procsSuffix.FindStringSubmatch(name); m != nil {
		res.Name = name[:len(name)-len(m[0])]
		res.Procs, _ = strconv.Atoi(m[1])
	}
	for i := 1; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Result{}, false
		}
		res.Metrics = append(res.Metrics, Metric{Value: v, Unit: f[i+1]})
	}
	return res, true
}

// Pair is one measured variant and the baseline it is compared with, from
// the same run. Either side may be missing when a benchmark has no
// counterpart.
type Pair struct {
	// Pkg is the package both came from.
	Pkg string
	// Benchmark is the name above the database, e.g. "BenchmarkAcquire".
	Benchmark string
	// Database is the path element above the leaf, e.g. "postgres".
	Database string
	// Plugin is the "lockplugin" leaf.
	Plugin *Result
	// BaselineName is what follows "baseline=", e.g. "redislock".
	BaselineName string
	// Baseline is the "baseline=<what>" leaf.
	Baseline *Result
	// RoundRatios are the plugin's time per operation over the baseline's
	// in each round where both ran (see WithRoundRatios), in round order.
	RoundRatios []float64
}

// Ratio is the median of the per-round ratios when there are any, else
// the plugin's time per operation over the baseline's; false when either
// is missing.
func (p Pair) Ratio() (float64, bool) {
	if len(p.RoundRatios) > 0 {
		return median(p.RoundRatios), true
	}
	if p.Plugin == nil || p.Baseline == nil {
		return 0, false
	}
	a, ok1 := p.Plugin.Metric("ns/op")
	b, ok2 := p.Baseline.Metric("ns/op")
	if !ok1 || !ok2 || b == 0 {
		return 0, false
	}
	return a / b, true
}

const (
	pluginLeaf     = "lockplugin"
	baselinePrefix = "baseline="
)

// PairUp groups results by parent path: a "lockplugin" leaf is paired with
// each "baseline=<what>" sibling. Results whose leaf is neither are
// returned as others. Order follows the run.
func PairUp(results []Result) (pairs []Pair, others []Result) {
	type group struct {
		pkg, parent string
		plugin      *Result
		baselines   []*Result
	}
	var order []*group
	groups := map[string]*group{}
	for i := range results {
		r := &results[i]
		slash := strings.LastIndex(r.Name, "/")
		if slash < 0 {
			others = append(others, *r)
			continue
		}
		parent, leaf := r.Name[:slash], r.Name[slash+1:]
		if leaf != pluginLeaf && !strings.HasPrefix(leaf, baselinePrefix) {
			others = append(others, *r)
			continue
		}
		key := r.Pkg + "\x00" + parent
		g := groups[key]
		if g == nil {
			g = &group{pkg: r.Pkg, parent: parent}
			groups[key] = g
			order = append(order, g)
		}
		if leaf == pluginLeaf {
			g.plugin = r
		} else {
			g.baselines = append(g.baselines, r)
		}
	}
	for _, g := range order {
		bench, db := g.parent, "-"
		if i := strings.LastIndex(g.parent, "/"); i >= 0 {
			bench, db = g.parent[:i], g.parent[i+1:]
		}
		if len(g.baselines) == 0 {
			pairs = append(pairs, Pair{Pkg: g.pkg, Benchmark: bench, Database: db, Plugin: g.plugin})
			continue
		}
		for _, b := range g.baselines {
			slash := strings.LastIndex(b.Name, "/")
			pairs = append(pairs, Pair{Pkg: g.pkg, Benchmark: bench, Database: db, Plugin: g.plugin,
				BaselineName: strings.TrimPrefix(b.Name[slash+1:], baselinePrefix), Baseline: b})
		}
	}
	return pairs, others
}

// WithRoundRatios sets each pair's RoundRatios from the unfolded results
// of a run in rounds: the variant and its baseline ran one after the
// other in each round, so a round's ratio compares them under the same
// load, which the ratio of the two medians does not on a shared machine.
// Results without a round (Round 0) give none.
func WithRoundRatios(pairs []Pair, raw []Result) {
	type key struct {
		pkg, name string
		round     int
	}
	ns := map[key]float64{}
	var rounds []int
	seen := map[int]bool{}
	for _, r := range raw {
		if r.Round == 0 {
			continue
		}
		if v, ok := r.Metric("ns/op"); ok {
			ns[key{r.Pkg, r.Name, r.Round}] = v
		}
		if !seen[r.Round] {
			seen[r.Round] = true
			rounds = append(rounds, r.Round)
		}
	}
	for i := range pairs {
		p := &pairs[i]
		if p.Plugin == nil || p.Baseline == nil {
			continue
		}
		for _, n := range rounds {
			a, ok1 := ns[key{p.Pkg, p.Plugin.Name, n}]
			b, ok2 := ns[key{p.Pkg, p.Baseline.Name, n}]
			if ok1 && ok2 && b != 0 {
				p.RoundRatios = append(p.RoundRatios, a/b)
			}
		}
	}
}
