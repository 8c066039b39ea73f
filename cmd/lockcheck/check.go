package main

import (
	"context"
	"errors"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
)

// check is one row of lockcheck's report.
type check struct {
	// id is what -only takes.
	id string
	// title names the row.
	title string
	// needsRedis marks a check that runs only with -redis.
	needsRedis bool
	// run runs the scenario.
	run func(ctx context.Context, e *env, cfg scenario.Config) (scenario.Result, error)
}

// allChecks lists every check lockcheck knows: the database scenarios of
// scenario.All, the claim and SQLite writer-lock scenarios, the lease
// scenarios, then fenced writes and election.
func allChecks() []check {
	var cs []check
	for _, s := range scenario.All() {
		cs = append(cs, check{id: s.ID, title: s.Title, run: func(ctx context.Context, e *env, cfg scenario.Config) (scenario.Result, error) {
			return s.Run(ctx, e.db, cfg)
		}})
	}
	cs = append(cs, claimChecks()...)
	cs = append(cs, leaseChecks()...)
	return append(cs, fenceChecks()...) // fence.go

}

func checkIDs() []string {
	var ids []string
	for _, c := range allChecks() {
		ids = append(ids, c.id)
	}
	return ids
}

// selectChecks returns the checks to run: those named by -only, or all of
// them; the Redis ones only with a Redis client.
func selectChecks(o options, haveRedis bool) []check {
	want := map[string]bool{}
	for _, id := range o.only {
		want[id] = true
	}
	var out []check
	for _, c := range allChecks() {
		if len(want) > 0 && !want[c.id] {
			continue
		}
		if c.needsRedis && !haveRedis {
			continue
		}
		out = append(out, c)
	}
	return out
}

// Verdicts beyond scenario.Result.Verdict's.
const (
	verdictError   = "error"
	verdictSkipped = "skipped"
)

// outcome is one scenario's row in the report.
type outcome struct {
	// ID is the scenario's -only name.
	ID string `json:"id"`
	scenario.Result
	// Verdict is "ok", "baseline", "VIOLATED", "not supported here",
	// "error", or "skipped" when the time ran out before the scenario.
	Verdict string `json:"verdict"`
	// Error is the scenario's error, for the "error" verdict.
	Error string `json:"error,omitempty"`
	// OpsPerSecond is Ops over Elapsed.
	OpsPerSecond float64 `json:"ops_per_second"`
}

// failed reports whether the row makes lockcheck exit 1.
func (o outcome) failed() bool {
	return o.Verdict == "VIOLATED" || o.Verdict == verdictError || o.Verdict == verdictSkipped
}

// runCheck runs one check and turns its result or error into a row.
func runCheck(ctx context.Context, e *env, c check, cfg scenario.Config) outcome {
	if err := ctx.Err(); err != nil {
		return outcome{ID: c.id, Result: scenario.Result{Scenario: c.title}, Verdict: verdictSkipped, Error: "not run: " + err.Error()}
	}
	r, err := c.run(ctx, e, cfg)
	r.Scenario = c.title
	o := outcome{ID: c.id, Result: r}
	switch {
	case err == nil:
		o.Unsupported = e.database.redact(o.Unsupported)
		o.Verdict = r.Verdict()
	case errors.Is(err, lockplugin.ErrUnsupported):
		// A mechanism the database cannot run is an answer, not a failure.
		o.Unsupported = oneLine(e.database.redact(err.Error()))
		o.Verdict = o.Result.Verdict()
	default:
		o.Verdict = verdictError
		o.Error = oneLine(e.database.redact(err.Error()))
	}
	o.OpsPerSecond = o.Result.OpsPerSecond()
	return o
}

// runChecks runs the selected checks one after the other, reporting each
// to p.
func runChecks(ctx context.Context, e *env, o options, p *progress) *report {
	cfg := scenario.Config{Workers: o.workers, Rounds: o.rounds, Prefix: o.prefix}.Defaults()
	rep := &report{Database: e.database.shown, Dialect: e.dialect.String(), Redis: e.redisShown, Workers: cfg.Workers, Rounds: cfg.Rounds}
	checks := selectChecks(o, e.redis != nil)
	for i, c := range checks {
		p.start(i+1, len(checks), c.title)
		out := runCheck(ctx, e, c, cfg)
		p.done(i+1, len(checks), out)
		rep.Scenarios = append(rep.Scenarios, out)
	}
	rep.OK = !rep.failed()
	return rep
}
