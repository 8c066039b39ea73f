package drivers_test

import (
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
)

func TestSameAsDialects(t *testing.T) {
	ds := []dialects.Dialect{
		dialects.New("postgres", ""), dialects.New("cockroachdb", ""), dialects.New("postgres", "PostgreSQL 11.2-YB-2.20.0.0-b0"),
		dialects.New("postgres", "CockroachDB CCL v23.2.0"),
		dialects.New("mysql", ""), dialects.New("mysql", "8.0.36"), dialects.New("mysql", "8.0.0"), dialects.New("mysql", "5.7.44"),
		dialects.New("mysql", "10.11.6-MariaDB"), dialects.New("mysql", "5.5.5-10.6.1-MariaDB"), dialects.New("mysql", "10.2.0-MariaDB"),
		dialects.New("mysql", "8.0.11-TiDB-v8.4.0"), dialects.New("mysql", "8.0.11-TiDB-v6.0.0"),
		dialects.New("sqlserver", ""), dialects.New("oracle", ""), dialects.New("sqlite", ""), dialects.New("clickhouse", ""),
	}
	for _, d := range ds {
		dr := drivers.For(d)
		eq := func(what, a, b string) {
			if a != b {
				t.Errorf("%s %s: dialects %q, driver %q", d, what, a, b)
			}
		}
		for n := 1; n < 3; n++ {
			eq("bindvar", d.BindVar(n), dr.BindVar(n))
			eq("bigint", d.BigintBindVar(n), dr.BigintBindVar(n))
		}
		if d.ReusesBindVars() != dr.ReusesBindVars() {
			t.Errorf("%s reuse", d)
		}
		for _, s := range []string{"a", "a\"b`c]d", "x.y", "app.holds", "Ab.c"} {
			eq("ident", d.QuoteIdent(s), dr.QuoteIdent(s))
			eq("table", d.QuoteTable(s), dr.QuoteTable(s))
		}
		eq("now", d.NowMillisSQL(), dr.NowMillis())
		for _, f := range append(lockFeatures, dialects.LockWait, dialects.WriterLock) {
			eq("lock "+string(f), d.LockSQL(f), dr.LockSQL(f))
			eq("clause "+string(f), d.LockClauseSQL(f), dr.LockClauseSQL(f))
		}
		eq("latest", d.LatestRead(), dr.LatestRead())
		if int(d.LockWaitStyle()) != int(dr.LockWaitStyle()) {
			t.Errorf("%s wait style %d %d", d, d.LockWaitStyle(), dr.LockWaitStyle())
		}
		for _, w := range []time.Duration{0, time.Millisecond, 1500 * time.Millisecond, time.Hour} {
			eq("wait", d.LockWaitSQL(w), dr.LockWaitSQL(w))
		}
	}
}
