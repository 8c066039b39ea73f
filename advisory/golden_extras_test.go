package advisory

import (
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

type namedStatement struct {
	name string
	st   statement
}

// goldenExtras are the statements built outside the plans: clearing a
// session's holds, killing a cancelled wait, releasing by handle, and the
// transaction around a guarded try's question.
func goldenExtras(d dialects.Dialect) []namedStatement {
	f := family(d)
	var out []namedStatement
	if st := f.Clear("Adv-Job", maxClears); st.SQL != "" {
		name := "clear: release all"
		if f.Answers() == sqldriver.AnswersBool {
			name = "clear: count holds"
		}
		out = append(out, namedStatement{name, stmt(st)})
	}
	if st := f.Kill(42); st.SQL != "" {
		out = append(out, namedStatement{"kill a cancelled wait", stmt(st)})
	}
	if st := f.ReleaseHandle("10737418241073741824187"); st.SQL != "" {
		out = append(out, namedStatement{"release by handle", stmt(st)})
	}
	for _, st := range f.Session("Adv-Job", sqldriver.AdvisoryWait{}).Steps {
		if st.Guard != "" {
			out = append(out, namedStatement{"try guard transaction", statement{sql: st.GuardBegin + "\n" + st.GuardEnd}})
		}
	}
	return out
}
