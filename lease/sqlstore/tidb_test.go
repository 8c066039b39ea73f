package sqlstore

import (
	"reflect"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
)

// TestTiDBStatements pins the statements of TiDB's transactions, and that
// none of them reads the insert id: release and refresh are the plain
// UPDATEs, sent only after the held row was locked.
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
	now := drivers.For(d).NowMillis()
	exp := "CASE WHEN ? = 0 THEN 0 ELSE " + now + " + ? END"
	for _, c := range []struct {
		name string
		got  stmt
		sql  string
		args []arg
	}{
		{"read", st.tx.read, "SELECT fence, CASE WHEN owner = ? THEN 1 ELSE 0 END, CASE WHEN expires_at = 0 OR expires_at > " + now + " THEN 1 ELSE 0 END FROM `lock_leases` WHERE lock_name = ? FOR UPDATE", []arg{argOwner, argName}},
		{"take", st.tx.take, "UPDATE `lock_leases` SET owner = ?, expires_at = " + exp + ", fence = " + next("fence", now) + " WHERE lock_name = ?", []arg{argOwner, argTTL, argTTL, argName}},
		{"renew", st.tx.renew, "UPDATE `lock_leases` SET expires_at = " + exp + " WHERE lock_name = ?", []arg{argTTL, argTTL, argName}},
		{"insert", st.tx.insert, "INSERT INTO `lock_leases` (lock_name, owner, expires_at, fence) VALUES (?, ?, " + exp + ", " + now + " * 1000)", []arg{argName, argOwner, argTTL, argTTL}},
		{"fence", st.tx.fence, "SELECT fence FROM `lock_leases` WHERE lock_name = ? FOR UPDATE", []arg{argName}},
		{"held", st.tx.held, "SELECT 1 FROM `lock_leases` WHERE lock_name = ? AND owner = ? AND (expires_at = 0 OR expires_at > " + now + ") FOR UPDATE", []arg{argName, argOwner}},
		{"release", st.release, "UPDATE `lock_leases` SET expires_at = -1 WHERE lock_name = ? AND owner = ? AND (expires_at = 0 OR expires_at > " + now + ")", []arg{argName, argOwner}},
	} {
		if c.got.SQL != c.sql {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got.SQL, c.sql)
		}
		if !reflect.DeepEqual(c.got.args, c.args) {
			t.Errorf("%s: args %v, want %v", c.name, c.got.args, c.args)
		}
	}
	if mysql := mustRender(t, "mysql"); mysql.tx != nil {
		t.Error("MySQL got TiDB's statements")
	}
}
