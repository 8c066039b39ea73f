package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// report is lockcheck's result, as printed in the table and as JSON.
type report struct {
	// Database is the DSN with its password masked.
	Database string `json:"database"`
	// Dialect is what lockplugin recognised, e.g. "MariaDB 10.11.6".
	Dialect string `json:"dialect"`
	// Redis is the -redis address, masked; empty without the flag.
	Redis string `json:"redis,omitempty"`
	// Workers and Rounds size every scenario.
	Workers int `json:"workers"`
	Rounds  int `json:"rounds"`
	// OK is true when lockcheck exits 0.
	OK bool `json:"ok"`
	// Scenarios has one entry per scenario run.
	Scenarios []outcome `json:"scenarios"`
}

func (r *report) failed() bool {
	for _, o := range r.Scenarios {
		if o.failed() {
			return true
		}
	}
	return false
}

func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeTable prints the report for people: lines of at most width
// columns (0: no limit), cells and reasons wrapped to fit.
func (r *report) writeTable(w io.Writer, width int) {
	fmt.Fprintf(w, "lockcheck: %s at %s, %d workers x %d rounds\n", r.Dialect, r.Database, r.Workers, r.Rounds)
	if r.Redis != "" {
		fmt.Fprintf(w, "Redis at %s\n", r.Redis)
	}
	fmt.Fprintln(w)
	rows := [][]string{{"SCENARIO", "EXPECTED", "OBSERVED", "VERDICT", "OPS/S"}}
	for _, o := range r.Scenarios {
		rows = append(rows, []string{o.Scenario, dash(o.Expected), dash(o.Observed), o.Verdict, opsCell(o)})
	}
	writeTable(w, rows, width)

	var unsupported, errs []string
	violated, failedRuns := 0, 0
	var baseline *outcome
	for i, o := range r.Scenarios {
		switch {
		case o.Verdict == "not supported here":
			unsupported = append(unsupported, indented(o.Scenario+": "+o.Unsupported, width))
		case o.Verdict == "VIOLATED":
			violated++
		case o.Error != "":
			errs = append(errs, indented(o.Scenario+": "+o.Error, width))
			if o.failed() {
				failedRuns++
			}
		}
		if o.Baseline && baseline == nil {
			baseline = &r.Scenarios[i]
		}
	}
	if len(unsupported) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Not supported here (not a failure):")
		fmt.Fprintln(w, strings.Join(unsupported, "\n"))
	}
	if len(errs) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Errors:")
		fmt.Fprintln(w, strings.Join(errs, "\n"))
	}
	fmt.Fprintln(w)
	switch {
	case violated > 0 || failedRuns > 0:
		fmt.Fprintf(w, "FAILED: %d guarantee(s) violated, %d scenario(s) could not run.\n", violated, failedRuns)
	default:
		fmt.Fprintln(w, "Every guarantee held.")
	}
	if baseline != nil && baseline.Unsupported == "" && baseline.Error == "" {
		if baseline.Lost > 0 {
			fmt.Fprintf(w, "Without protection the same workload lost %d update(s): %s.\n", baseline.Lost, baseline.Observed)
		} else {
			fmt.Fprintln(w, "Without protection nothing was lost this time: the race did not show; raise -workers or -rounds to see it.")
		}
	}
}

// indented is s as a list item: indented by two, wrapped to width (0: no
// limit) with its continuation lines indented by four.
func indented(s string, width int) string {
	if width <= 0 {
		return "  " + s
	}
	lines := wrapCell(s, width-4)
	for i := range lines {
		if i == 0 {
			lines[i] = "  " + lines[i]
		} else {
			lines[i] = "    " + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func opsCell(o outcome) string {
	if o.Unsupported != "" || o.Error != "" || o.OpsPerSecond == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", o.OpsPerSecond)
}

// progress shows one line per scenario while lockcheck runs: rewritten in
// place on a terminal, appended otherwise.
type progress struct {
	w   io.Writer
	tty bool
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, tty: isTerminal(w)}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progress) start(i, n int, title string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K[%d/%d] %s: running...", i, n, title)
	}
}

func (p *progress) done(i, n int, o outcome) {
	detail := o.Observed
	switch {
	case o.Unsupported != "":
		detail = o.Unsupported
	case o.Error != "":
		detail = o.Error
	}
	line := fmt.Sprintf("[%d/%d] %s: %s", i, n, o.Scenario, o.Verdict)
	if detail != "" {
		line += " (" + detail + ")"
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, line)
}
