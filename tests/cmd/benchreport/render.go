package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Machine describes where the benchmarks ran.
type Machine struct {
	GoVersion string
	GOOS      string
	GOARCH    string
	CPU       string
	NumCPU    int
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5 and 15 minute load
	// averages when the run started and ended ("" where unknown).
	LoadStart, LoadEnd string
}

// Header is what the report says about the run besides the figures.
type Header struct {
	// Date is when the run ended.
	Date time.Time
	// Machine is where it ran.
	Machine Machine
	// Reproduce is the command a reader runs to get the report again.
	Reproduce string
	// Command is the go test command that produced the figures.
	Command string
	// Rounds is how many times Command ran; 0 when the output was read
	// (-in).
	Rounds int
	// Focus are the -bench patterns run FocusRounds more times after the
	// rounds, for the pairs whose ratios matter most.
	Focus       []string
	FocusRounds int
	// Fairness is tests/lease TestFairnessReport's Markdown table; empty
	// when it did not run.
	Fairness string
}

// modulePrefix is cut from package paths to name each section after its
// directory in tests/.
const modulePrefix = "github.com/lockplugin/lockplugin/tests/"

// Render writes the Markdown report.
func Render(w io.Writer, h Header, run *Run) error {
	var b strings.Builder
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("Every figure below comes from the command shown, on the machine shown, against the databases\n")
	b.WriteString("its tests reach (see README.md for the LOCKPLUGIN_* variables). Each measured variant\n")
	b.WriteString("(`.../lockplugin`) is paired with the baseline it ran beside (`.../baseline=<what>`).\n")
	b.WriteString("The command runs in rounds: each round is one `go test -count 1`, in which a variant and its\n")
	b.WriteString("baseline run one right after the other. **ratio** is lockplugin's time per operation divided by\n")
	b.WriteString("the baseline's in the same round, the median over the rounds (below 1: faster than the\n")
	b.WriteString("baseline), with the lowest and highest round beside it; every other figure is the median of\n")
	b.WriteString("the rounds. The databases share the machine's cores: a ratio whose range spans 1 is a tie,\n")
	b.WriteString("and absolute times depend on the load; ratios, round trips and allocations do not. One\n")
	b.WriteString("exception: on a virtual machine whose cores sit idle, each round trip to a server on the same\n")
	b.WriteString("machine waits for a halted core to wake (`redis-benchmark -c 1 -t ping`: 63-70 µs idle, 21-26 µs\n")
	b.WriteString("with one core kept busy, on the 2-core VM of 2026-12-06), which weighs server-side work between round\n")
	b.WriteString("trips more than a loaded machine or a network does: the load average below says which it was.\n")
	b.WriteString("The benchmarks named ...Floor (under Other benchmarks) measure pairs interleaved within one\n")
	b.WriteString("process instead: each side takes turns in blocks of 50 operations, the order reversed every\n")
	b.WriteString("other block, and `<side>/<baseline>` is the median over the blocks of its time divided by the\n")
	b.WriteString("baseline's in the same block, so that the machine's swings hit both alike: where a pair's ratio\n")
	b.WriteString("above spans a wide range, read its interleaved figure.\n\n")
	fmt.Fprintf(&b, "Reproduce: `%s`\n\n", h.Reproduce)
	b.WriteString("| | |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| date | %s |\n", h.Date.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "| command | `%s` (in tests/) |\n", h.Command)
	if h.Rounds > 0 {
		fmt.Fprintf(&b, "| rounds | %d |\n", h.Rounds)
	}
	for _, f := range h.Focus {
		fmt.Fprintf(&b, "| and | `%s`, %d more rounds |\n", f, h.FocusRounds)
	}
	fmt.Fprintf(&b, "| Go | %s %s/%s |\n", h.Machine.GoVersion, h.Machine.GOOS, h.Machine.GOARCH)
	fmt.Fprintf(&b, "| CPU | %s |\n", cell(h.Machine.CPU))
	fmt.Fprintf(&b, "| logical CPUs | %d |\n", h.Machine.NumCPU)
	if h.Machine.LoadStart != "" || h.Machine.LoadEnd != "" {
		fmt.Fprintf(&b, "| load average (1, 5, 15 min) | %s at the start, %s at the end |\n", cell(h.Machine.LoadStart), cell(h.Machine.LoadEnd))
	}
	b.WriteString("\n")

	pairs, others := PairUp(run.Results)
	WithRoundRatios(pairs, run.Raw)
	byPkg := map[string][]Pair{}
	var pkgs []string
	for _, p := range pairs {
		if _, ok := byPkg[p.Pkg]; !ok {
			pkgs = append(pkgs, p.Pkg)
		}
		byPkg[p.Pkg] = append(byPkg[p.Pkg], p)
	}
	sort.Strings(pkgs)
	if len(pairs) == 0 && len(others) == 0 {
		b.WriteString("The run produced no benchmark results.\n\n")
	}
	for _, pkg := range pkgs {
		fmt.Fprintf(&b, "## %s\n\n", sectionName(pkg))
		b.WriteString("| benchmark | database | lockplugin | baseline | baseline figure | ratio |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
		for _, p := range byPkg[pkg] {
			ratio := "-"
			if r, ok := p.Ratio(); ok {
				ratio = fmt.Sprintf("%.2f×", r)
			}
			if n := len(p.RoundRatios); n > 1 {
				lo, hi := slices.Min(p.RoundRatios), slices.Max(p.RoundRatios)
				ratio += fmt.Sprintf(" (%.2f–%.2f, %d rounds)", lo, hi, n)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n",
				cell(p.Benchmark), cell(p.Database), figure(p.Plugin), cell(p.BaselineName), figure(p.Baseline), ratio)
		}
		b.WriteString("\n")
	}
	if h.Fairness != "" {
		b.WriteString("## Fairness: one hot name\n\n")
		b.WriteString("tests/lease `TestFairnessReport`: 8 workers take one name in turn (holding it 1 ms) on each\n")
		b.WriteString("store, beside go-redsync on the same Redis and etcd's concurrency.Mutex on the same cluster;\n")
		b.WriteString("how long each acquisition waited. Local and etcd queue their waiters; the others let them race.\n\n")
		b.WriteString(strings.TrimSpace(h.Fairness) + "\n\n")
	}
	if len(others) > 0 {
		b.WriteString("## Other benchmarks\n\n")
		b.WriteString("Benchmarks without a lockplugin/baseline pair.\n\n")
		b.WriteString("| package | benchmark | figure |\n| --- | --- | --- |\n")
		for i := range others {
			r := &others[i]
			fmt.Fprintf(&b, "| %s | %s | %s |\n", sectionName(r.Pkg), cell(r.Name), figure(r))
		}
		b.WriteString("\n")
	}
	if len(run.Skipped) > 0 {
		b.WriteString("## Skipped\n\n| package | benchmark | reason |\n| --- | --- | --- |\n")
		for _, n := range run.Skipped {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", sectionName(n.Pkg), cell(n.Name), cell(n.Reason))
		}
		b.WriteString("\n")
	}
	if len(run.Failed) > 0 {
		b.WriteString("## Failed\n\nThese did not finish; their figures are missing above.\n\n| package | benchmark | reason |\n| --- | --- | --- |\n")
		for _, n := range run.Failed {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", sectionName(n.Pkg), cell(n.Name), cell(n.Reason))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

func sectionName(pkg string) string {
	if pkg == "" {
		return "-"
	}
	if rest, ok := strings.CutPrefix(pkg, modulePrefix); ok {
		return "tests/" + rest
	}
	return pkg
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// figure shows a result's time per operation first, then its own metrics,
// then memory, as one cell.
func figure(r *Result) string {
	if r == nil {
		return "-"
	}
	var parts []string
	if ns, ok := r.Metric("ns/op"); ok {
		parts = append(parts, duration(ns)+"/op")
	}
	for _, m := range r.Metrics {
		switch m.Unit {
		case "ns/op", "B/op", "allocs/op":
			continue
		}
		parts = append(parts, number(m.Value)+" "+m.Unit)
	}
	if v, ok := r.Metric("B/op"); ok {
		parts = append(parts, strconv.FormatFloat(v, 'f', -1, 64)+" B/op")
	}
	if v, ok := r.Metric("allocs/op"); ok {
		parts = append(parts, strconv.FormatFloat(v, 'f', -1, 64)+" allocs/op")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// duration shows nanoseconds in the unit that keeps three significant
// digits readable.
func duration(ns float64) string {
	switch {
	case ns < 1e3:
		return number(ns) + " ns"
	case ns < 1e6:
		return number(ns/1e3) + " µs"
	case ns < 1e9:
		return number(ns/1e6) + " ms"
	}
	return number(ns/1e9) + " s"
}

// number shows v with about three significant digits and no exponent.
func number(v float64) string {
	a := math.Abs(v)
	var s string
	switch {
	case a >= 100 || v == math.Trunc(v):
		s = strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 0.01:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
