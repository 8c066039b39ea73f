package advisory

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/goldenfile"
)

// goldenWaits are the waits every plan is rendered for: a try, bounds that
// round (up) differently per database, one past Oracle's MAXWAIT, and
// forever.
var goldenWaits = []struct {
	name string
	w    wait
}{
	{"try", wait{}},
	{"wait 300ms", wait{d: 300 * time.Millisecond}},
	{"wait 1.5s+1µs", wait{d: 1500*time.Millisecond + time.Microsecond}},
	{"wait 2s+1ns", wait{d: 2*time.Second + time.Nanosecond}},
	{"wait 100h", wait{d: 100 * time.Hour}},
	{"forever", wait{forever: true}},
}

// TestAdvisoryGolden renders every statement package advisory builds, on
// every database: internal/drivers/<db>/testdata/advisory.golden.
func TestAdvisoryGolden(t *testing.T) {
	goldenfile.Check(t, "advisory", func(d dialects.Dialect, p *goldenfile.Page) {
		if _, err := sessionPlan(d, "adv-job", wait{forever: true}); err != nil {
			return // no advisory locks: nothing is built
		}
		for _, tc := range []struct{ what, name string }{
			{"empty", ""},
			{"plain", "adv-job"},
			{"NUL byte", "job\x00A"},
			{"255 x", strings.Repeat("x", 255)},
			{"256 x", strings.Repeat("x", 256)},
			{"128 UTF-16 units of 2", strings.Repeat("😀", 128)},
			{"128 bytes", strings.Repeat("x", 128)},
			{"130 bytes", strings.Repeat("é", 65)},
		} {
			res := "ok"
			if err := checkName(d, tc.name); err != nil {
				res = err.Error()
			}
			p.Add("name check, "+tc.what, res)
		}
		for _, gw := range goldenWaits {
			plan, err := sessionPlan(d, "Adv-Job", gw.w)
			if err != nil {
				p.Add("session "+gw.name, "error: "+err.Error())
				continue
			}
			for i, st := range plan.steps {
				p.Add("session "+gw.name+", step "+strconv.Itoa(i+1), renderStatement(stmt(st)))
			}
			p.Add("session "+gw.name+", release", renderStatement(plan.release))
			l := &Lock{name: "Adv-Job", fam: family(d)}
			if st, ok := l.waitMore(gw.w, time.Now()); ok {
				p.Add("session "+gw.name+", next wait", renderStatement(st))
			}
		}
		for _, gw := range goldenWaits {
			st, err := xactPlan(d, "Adv-Job", gw.w)
			if err != nil {
				p.Add("transaction "+gw.name, "error: "+err.Error())
				continue
			}
			p.Add("transaction "+gw.name, renderStatement(st))
		}
		for _, e := range goldenExtras(d) {
			p.Add(e.name, renderStatement(e.st))
		}
	})
}

// renderStatement shows a statement's text, its bind values (OUT for an
// Oracle OUT bind) and, where it has them, its guard and held answer.
func renderStatement(st statement) string {
	var b strings.Builder
	b.WriteString(st.sql)
	if len(st.args) > 0 {
		b.WriteString("\nargs:")
		for _, a := range st.args {
			b.WriteString(" " + renderArg(a))
		}
	}
	if st.guard != "" {
		b.WriteString("\nguard: " + st.guard + "\nguard arg: " + renderArg(st.guardArg))
	}
	if st.held != "" {
		b.WriteString("\nheld answer: " + st.held)
	}
	return b.String()
}

func renderArg(a any) string {
	if _, ok := a.(outParam); ok {
		return "OUT"
	}
	if s, ok := a.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%T(%v)", a, a)
}
