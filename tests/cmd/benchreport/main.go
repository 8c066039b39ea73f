// Command benchreport runs every benchmark of the tests module and writes
// BENCHMARKS.md: for each mechanism and database the figure, the baseline
// it was compared with, the ratio, the machine and the command. `make
// bench` runs it:
//
//	cd tests && go run ./cmd/benchreport -count 2 -focus './lease:^BenchmarkX$' -out ../BENCHMARKS.md
//
// It runs, from the current directory, -count rounds of
//
//	go test -run '^$' -bench . -benchmem -benchtime <t> -count 1 -p 1 -timeout 60m ./...
//
// then -focus-rounds more rounds of each -focus pattern (in its package
// directory when it names one), streaming go test's output to stderr.
// Packages run one at a time (-p 1) so that no benchmark competes with
// another for the CPUs. Benchmarks name their leaves
// BenchmarkXxx/<database>/lockplugin and, beside them,
// BenchmarkXxx/<database>/baseline=<what>; the report pairs them, and a
// pair's ratio is the median of its rounds' ratios: within a round the two
// ran one right after the other, under the same load.
//
// With -in it reads saved output instead of running (rounds are marked by
// the "# benchreport round N" lines it writes before each round).
// It exits 1 when a benchmark or package failed (the report is still
// written, listing the failures) and 2 for bad flags.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// patterns is a repeatable string flag.
type patterns []string

func (p *patterns) String() string { return strings.Join(*p, " ") }

func (p *patterns) Set(v string) error {
	if v == "" {
		return errors.New("empty pattern")
	}
	*p = append(*p, v)
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	benchtime := fs.String("benchtime", "1s", "go test -benchtime: a duration (1s) or an iteration count (100x)")
	bench := fs.String("bench", ".", "go test -bench: which benchmarks to run")
	count := fs.Int("count", 2, "rounds: each runs every benchmark once (go test -count 1); the report shows medians over the rounds")
	var focus patterns
	fs.Var(&focus, "focus", "a go test -bench pattern, optionally after its package directory and a colon (./lease:^BenchmarkX$), run -focus-rounds more times after the rounds (repeatable)")
	focusRounds := fs.Int("focus-rounds", 10, "how many more rounds the -focus patterns run")
	fairness := fs.Int("fairness", 0, "seconds per store of tests/lease TestFairnessReport, run after the benchmarks, its table in the report; 0: not run")
	out := fs.String("out", "BENCHMARKS.md", "file to write; - for standard output")
	in := fs.String("in", "", "read saved output (go test -bench, with benchreport's round lines) from this file instead of running go test")
	goCmd := fs.String("go", "go", "the go command")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "benchreport: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *count < 1 || *focusRounds < 0 {
		fmt.Fprintf(stderr, "benchreport: -count must be at least 1 and -focus-rounds at least 0\n")
		return 2
	}
	// A pattern may name its package directory first ("./lease:^BenchmarkX$"),
	// which saves starting every other package's test binary.
	goArgs := func(pattern string) []string {
		pkgs := "./..."
		if dir, p, ok := strings.Cut(pattern, ":"); ok && strings.HasPrefix(dir, "./") {
			pkgs, pattern = dir, p
		}
		return []string{"test", "-run", "^$", "-bench", pattern, "-benchmem", "-benchtime", *benchtime, "-count", "1", "-p", "1", "-timeout", "60m", pkgs}
	}
	h := Header{
		Reproduce: "make bench",
		Command:   *goCmd + " " + shellJoin(goArgs(*bench)),
		Machine:   machine(*goCmd),
		Rounds:    *count,
	}
	if len(focus) > 0 && *focusRounds > 0 {
		h.Focus, h.FocusRounds = focus, *focusRounds
	}
	var vars []string
	if *benchtime != "1s" {
		vars = append(vars, "BENCHTIME="+*benchtime)
	}
	if *count != 2 {
		vars = append(vars, "BENCHCOUNT="+strconv.Itoa(*count))
	}
	if len(vars) > 0 {
		h.Reproduce = "make bench " + strings.Join(vars, " ")
	}

	var output []byte
	failed := false
	if *in != "" {
		b, err := os.ReadFile(*in)
		if err != nil {
			fmt.Fprintf(stderr, "benchreport: %v\n", err)
			return 2
		}
		output = b
		h.Rounds = 0
	} else {
		// Rounds, then the focus patterns' rounds: each round is one go
		// test invocation, whose output follows a round line.
		var runs []string
		for range *count {
			runs = append(runs, *bench)
		}
		for range h.FocusRounds {
			runs = append(runs, h.Focus...)
		}
		var buf bytes.Buffer
		for i, pattern := range runs {
			fmt.Fprintf(&buf, "%s%d\n", roundMarker, i+1)
			args := goArgs(pattern)
			cmd := exec.Command(*goCmd, args...)
			cmd.Stdout = io.MultiWriter(stderr, &buf)
			cmd.Stderr = stderr
			fmt.Fprintf(stderr, "benchreport: round %d of %d: %s %s\n", i+1, len(runs), *goCmd, shellJoin(args))
			if err := cmd.Run(); err != nil {
				var exit *exec.ExitError
				if !errors.As(err, &exit) {
					fmt.Fprintf(stderr, "benchreport: running go test: %v\n", err)
					return 1
				}
				failed = true
			}
		}
		output = buf.Bytes()
		if *fairness > 0 {
			table, err := runFairness(*goCmd, *fairness, stderr)
			if err != nil {
				fmt.Fprintf(stderr, "benchreport: the fairness report: %v\n", err)
				failed = true
			}
			h.Fairness = table
		}
	}
	h.Date = time.Now()
	h.Machine.LoadEnd = loadAverage()

	parsed, err := Parse(bytes.NewReader(output))
	if err != nil {
		fmt.Fprintf(stderr, "benchreport: reading go test output: %v\n", err)
		return 1
	}
	parsed.Raw = parsed.Results
	parsed.Results = Medians(parsed.Results)
	if parsed.CPU != "" && h.Machine.CPU == "" {
		h.Machine.CPU = parsed.CPU
	}
	if err := write(*out, stdout, h, parsed); err != nil {
		fmt.Fprintf(stderr, "benchreport: %v\n", err)
		return 1
	}
	if *out != "-" {
		fmt.Fprintf(stderr, "benchreport: wrote %s: %d results, %d skipped, %d failed\n", *out, len(parsed.Results), len(parsed.Skipped), len(parsed.Failed))
	}
	if failed || len(parsed.Failed) > 0 {
		return 1
	}
	return 0
}

// write renders the report to path, replacing the file only once the whole
// report is written.
func write(path string, stdout io.Writer, h Header, run *Run) error {
	if path == "-" {
		return Render(stdout, h, run)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".benchreport-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	if err := Render(w, h, run); err != nil {
		tmp.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// machine describes this machine: the Go that runs the benchmarks, the
// CPU model and the number of logical CPUs.
func machine(goCmd string) Machine {
	m := Machine{GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU()}
	if out, err := exec.Command(goCmd, "env", "GOVERSION", "GOOS", "GOARCH").Output(); err == nil {
		if f := strings.Fields(string(out)); len(f) == 3 {
			m.GoVersion, m.GOOS, m.GOARCH = f[0], f[1], f[2]
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPU = cpuModel(string(b))
	}
	m.LoadStart = loadAverage()
	return m
}

// loadAverage returns /proc/loadavg's first three fields (the 1, 5 and 15
// minute load averages), "" where there is none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// cpuModel reads the first "model name" of /proc/cpuinfo.
func cpuModel(cpuinfo string) string {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// shellJoin quotes the arguments that a shell would otherwise change.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$*?[]{}()<>|&;'\" \\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// runFairness runs tests/lease TestFairnessReport for seconds per store and
// returns the Markdown table it writes (I25_FAIRNESS_OUT).
func runFairness(goCmd string, seconds int, stderr io.Writer) (string, error) {
	f, err := os.CreateTemp("", "benchreport-fairness-*.md")
	if err != nil {
		return "", err
	}
	f.Close()
	defer os.Remove(f.Name())
	args := []string{"test", "-count", "1", "-timeout", "30m", "-run", "^TestFairnessReport$", "-v", "./lease"}
	cmd := exec.Command(goCmd, args...)
	cmd.Env = append(os.Environ(), "I25_FAIRNESS_SECONDS="+strconv.Itoa(seconds), "I25_FAIRNESS_OUT="+f.Name())
	cmd.Stdout, cmd.Stderr = stderr, stderr
	fmt.Fprintf(stderr, "benchreport: the fairness report: I25_FAIRNESS_SECONDS=%d %s %s\n", seconds, goCmd, shellJoin(args))
	runErr := cmd.Run()
	table, err := os.ReadFile(f.Name())
	if err != nil {
		return "", err
	}
	return string(table), runErr
}
