package drivers_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/goldenfile"
)

var lockFeatures = []dialects.Feature{
	dialects.ForUpdate, dialects.ForShare, dialects.ForNoKeyUpdate, dialects.ForKeyShare,
	dialects.NoWait, dialects.SkipLocked, dialects.LockOf,
}

// TestPhrasingGolden: what every family shares, per database.
func TestPhrasingGolden(t *testing.T) {
	goldenfile.Check(t, "phrasing", func(d dialects.Dialect, p *goldenfile.Page) {
		dr := drivers.For(d)
		p.Add("bind parameters 1 and 2", dr.BindVar(1)+" "+dr.BindVar(2))
		p.Add("bigint bind parameter 1", dr.BigintBindVar(1))
		p.Add("reuses bind parameters", strconv.FormatBool(dr.ReusesBindVars()))
		p.Add("identifier with a quote", dr.QuoteIdent("a\"b`c]d"))
		p.Add("schema-qualified table", dr.QuoteTable("billing.holds"))
		p.Add("clock in epoch milliseconds", dr.NowMillis())
		p.Add("first 100 rows", dr.SelectFirst("a", "t", "b < 1", 100))
		for _, f := range lockFeatures {
			p.Add("lock "+string(f), dr.LockSQL(f))
			p.Add("lock clause "+string(f), dr.LockClauseSQL(f))
		}
		p.Add("latest read", dr.LatestRead())
		p.Add("savepoint", dr.Savepoint("sp"))
		p.Add("rollback to savepoint", dr.RollbackTo("sp"))
		p.Add("release savepoint", dr.ReleaseSavepoint("sp"))
		p.Add("lock wait style", strconv.Itoa(int(dr.LockWaitStyle())))
		p.Add("lock wait 1500ms", dr.LockWaitSQL(1500*time.Millisecond))
	})
}
