package advisory

import (
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// TestTiDBPlan checks what the exact-SQL table of sql_test.go does not:
// the try's guard reads the name as TiDB keys it (lower case), and waits
// are made of 1 s GET_LOCKs however long the bound, each evaluated once
// (ANY_VALUE arguments).
func TestTiDBPlan(t *testing.T) {
	f := family(testTiDB)
	if got := f.Session("Job-ÄB", sqldriver.AdvisoryWait{}).Steps[0].GuardArg; got != "job-äb" {
		t.Errorf("guard arg %q, want the lower-cased name", got)
	}
	for _, w := range []wait{{forever: true}, {d: time.Hour}, {d: 300 * time.Millisecond}} {
		st := f.Session("n", w.sd()).Steps[1]
		if st.Args[1] != int64(1) || st.SQL != "SELECT GET_LOCK(ANY_VALUE(?), ANY_VALUE(?))" || st.Held != "SELECT 0" {
			t.Errorf("wait %+v: %+v", w, st)
		}
	}
	l := &Lock{name: "n", fam: f}
	started := time.Now().Add(-1500 * time.Millisecond)
	if _, ok := l.waitMore(wait{d: 2 * time.Second}, started); !ok {
		t.Error("a 2 s wait stopped after 1.5 s")
	}
	if _, ok := l.waitMore(wait{d: time.Second}, started); ok {
		t.Error("a 1 s wait went on after 1.5 s")
	}
	if _, ok := (&Lock{name: "n", fam: family(testMySQL)}).waitMore(wait{d: 2 * time.Second}, started); ok {
		t.Error("MySQL's one GET_LOCK wait was followed by another")
	}
}
