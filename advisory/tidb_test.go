package advisory

import (
	"testing"
	"time"
)

// TestTiDBPlan checks what the exact-SQL table of sql_test.go does not:
// the try's guard reads the name as TiDB keys it (lower case), and waits
// are made of 1 s GET_LOCKs however long the bound, each evaluated once
// (ANY_VALUE arguments).
func TestTiDBPlan(t *testing.T) {
	if got := tidbTry("Job-ÄB").guardArg; got != "job-äb" {
		t.Errorf("guard arg %q, want the lower-cased name", got)
	}
	for _, w := range []wait{{forever: true}, {d: time.Hour}, {d: 300 * time.Millisecond}} {
		st := tidbWait("n", w)
		if st.args[1] != int64(1) || st.sql != "SELECT GET_LOCK(ANY_VALUE(?), ANY_VALUE(?))" || st.held != "SELECT 0" {
			t.Errorf("wait %+v: %+v", w, st)
		}
	}
	started := time.Now().Add(-1500 * time.Millisecond)
	if _, ok := waitMore(dialectOf(t, "mysql", "8.0.11-TiDB-v8.4.0"), "n", wait{d: 2 * time.Second}, started); !ok {
		t.Error("a 2 s wait stopped after 1.5 s")
	}
	if _, ok := waitMore(dialectOf(t, "mysql", "8.0.11-TiDB-v8.4.0"), "n", wait{d: time.Second}, started); ok {
		t.Error("a 1 s wait went on after 1.5 s")
	}
}
