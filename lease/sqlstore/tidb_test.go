package sqlstore

import (
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
)

// TestTiDBStatements checks what the golden file of TiDB
// (internal/drivers/tidb/testdata/leasetable.golden) shows without saying
// why: a TiDB server gets the statements of one transaction per operation,
// and none of the statements sent there reads the insert id (TiDB keeps
// the insert id of an attempt it retried and threw away, so a fence read
// from it could be another owner's: see internal/drivers/tidb's
// LeaseTable). MySQL, on the same dialector, keeps its single statements.
func TestTiDBStatements(t *testing.T) {
	d := dialects.New("mysql", "8.0.11-TiDB-v8.4.0")
	if d.Engine != dialects.TiDB {
		t.Fatalf("engine %v, want TiDB", d.Engine)
	}
	st, err := render(d, "`lock_leases`")
	if err != nil {
		t.Fatal(err)
	}
	if st.tx == nil {
		t.Fatal("no TiDB statements")
	}
	x := st.tx
	for name, s := range map[string]stmt{
		"read": x.read, "take": x.take, "renew": x.renew, "insert": x.insert, "fence": x.fence, "held": x.held,
		"release": st.release, "refresh": st.refresh, "purge": st.purge,
	} {
		if strings.Contains(s.SQL, "LAST_INSERT_ID") {
			t.Errorf("%s reads the insert id on TiDB: %s", name, s.SQL)
		}
	}
	if mysql := mustRender(t, "mysql"); mysql.tx != nil {
		t.Error("MySQL got TiDB's statements")
	}
}
