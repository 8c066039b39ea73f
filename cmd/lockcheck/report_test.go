package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/dialects"
)

func fakeCheck(id string, r scenario.Result, err error) check {
	return check{id: id, title: "title of " + id, run: func(context.Context, *env, scenario.Config) (scenario.Result, error) {
		return r, err
	}}
}

func TestRunCheckVerdicts(t *testing.T) {
	e := &env{database: database{secrets: []string{"s3cr3t"}}}
	unsupported := &dialects.UnsupportedError{Dialect: "SQLite", Feature: "SKIP LOCKED"}
	cases := []struct {
		name    string
		r       scenario.Result
		err     error
		verdict string
		failed  bool
	}{
		{"held", scenario.Result{OK: true, Ops: 10, Elapsed: time.Second}, nil, "ok", false},
		{"violated", scenario.Result{Lost: 3, Ops: 10}, nil, "VIOLATED", true},
		{"baseline", scenario.Result{Baseline: true, Lost: 7}, nil, "baseline", false},
		{"unsupported result", scenario.Result{Unsupported: "no SKIP LOCKED"}, nil, "not supported here", false},
		{"unsupported error", scenario.Result{}, fmt.Errorf("queue: %w", unsupported), "not supported here", false},
		{"error", scenario.Result{}, errors.New("dial user:s3cr3t@db\nrefused"), "error", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := runCheck(context.Background(), e, fakeCheck("x", c.r, c.err), scenario.Config{})
			if o.Verdict != c.verdict || o.failed() != c.failed {
				t.Fatalf("verdict %q failed %v; want %q %v", o.Verdict, o.failed(), c.verdict, c.failed)
			}
			if o.Scenario != "title of x" || o.ID != "x" {
				t.Errorf("row named %q/%q", o.ID, o.Scenario)
			}
			if strings.Contains(o.Error, "s3cr3t") || strings.Contains(o.Error, "\n") {
				t.Errorf("error %q holds the password or spans lines", o.Error)
			}
			if c.verdict == "not supported here" && o.Unsupported == "" {
				t.Errorf("no reason given")
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if o := runCheck(ctx, e, fakeCheck("late", scenario.Result{OK: true}, nil), scenario.Config{}); o.Verdict != verdictSkipped || !o.failed() {
		t.Errorf("a check the time ran out for: verdict %q", o.Verdict)
	}
}

func TestWriteTable(t *testing.T) {
	rep := &report{Database: "sqlite:/tmp/x.db", Dialect: "SQLite", Workers: 8, Rounds: 25, Scenarios: []outcome{
		{ID: "unprotected", Result: scenario.Result{Scenario: "lost update / no protection", Expected: "updates lost", Observed: "120 lost of 200", Baseline: true, Lost: 120, Ops: 200}, Verdict: "baseline", OpsPerSecond: 400},
		{ID: "for-update", Result: scenario.Result{Scenario: "lost update / FOR UPDATE", Unsupported: "lockplugin: FOR UPDATE is not supported on SQLite"}, Verdict: "not supported here"},
		{ID: "expr", Result: scenario.Result{Scenario: "lost update / UPDATE n = n + 1", Expected: "0 lost", Observed: "2 lost of 200", Lost: 2}, Verdict: "VIOLATED"},
		{ID: "advisory", Result: scenario.Result{Scenario: "counter / advisory lock"}, Verdict: "error", Error: "boom"},
	}}
	var b bytes.Buffer
	rep.writeTable(&b, tableWidth)
	out := b.String()
	for _, want := range []string{
		"lockcheck: SQLite at sqlite:/tmp/x.db, 8 workers x 25 rounds",
		"lost update / no protection     updates lost",
		"Not supported here (not a failure):\n  lost update / FOR UPDATE: lockplugin: FOR UPDATE is not supported on SQLite",
		"Errors:\n  counter / advisory lock: boom",
		"FAILED: 1 guarantee(s) violated, 1 scenario(s) could not run.",
		"Without protection the same workload lost 120 update(s): 120 lost of 200.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !rep.failed() {
		t.Error("a violated guarantee does not fail the report")
	}

	b.Reset()
	if err := rep.writeJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	scen := back["scenarios"].([]any)[0].(map[string]any)
	for _, key := range []string{"id", "scenario", "expected", "observed", "verdict", "lost", "ops", "ops_per_second", "baseline"} {
		if _, ok := scen[key]; !ok {
			t.Errorf("JSON scenario lacks %q: %v", key, scen)
		}
	}
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b}
	p.start(1, 2, "a")
	p.done(1, 2, outcome{Result: scenario.Result{Scenario: "a", Observed: "0 lost of 10"}, Verdict: "ok"})
	if got := b.String(); got != "[1/2] a: ok (0 lost of 10)\n" {
		t.Errorf("plain progress %q", got)
	}
	b.Reset()
	p.tty = true
	p.start(2, 2, "b")
	p.done(2, 2, outcome{Result: scenario.Result{Scenario: "b"}, Verdict: "error", Error: "boom"})
	if got := b.String(); got != "\r\033[K[2/2] b: running...\r\033[K[2/2] b: error (boom)\n" {
		t.Errorf("terminal progress %q", got)
	}
}
