package sqlstore

import (
	"strconv"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/goldenfile"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// TestLeaseTableGolden renders every statement the table store sends, with
// the order of its bind parameters, on every database:
// internal/drivers/<database>/testdata/leasetable.golden.
func TestLeaseTableGolden(t *testing.T) {
	goldenfile.Check(t, "leasetable", func(d dialects.Dialect, p *goldenfile.Page) {
		table, err := quoteTable(d, DefaultTable)
		if err != nil {
			t.Fatal(err)
		}
		st, err := render(d, table)
		if err != nil {
			return // not supported: an empty page
		}
		ddl, err := createTableSQL(d, table)
		if err != nil {
			t.Fatal(err)
		}
		p.Add("create table", ddl)
		qualified, err := quoteTable(d, "app.leases")
		if err != nil {
			t.Fatal(err)
		}
		ddl, err = createTableSQL(d, qualified)
		if err != nil {
			t.Fatal(err)
		}
		p.Add("create table app.leases", ddl)
		if st.readsFirst {
			addStmt(p, "acquire's read first (refused on a row, the acquire then not sent)", st.heldByOther)
		}
		addStmt(p, "acquire", st.acquire)
		if st.tx != nil {
			p.Add("acquire fence from", "transaction fence (the acquire above is not sent)")
		} else {
			p.Add("acquire fence from", replies[st.acquireReply])
		}
		addStmt(p, "release", st.release)
		addStmt(p, "refresh", st.refresh)
		if st.tx != nil {
			p.Add("release and refresh held if", "transaction held returned a row")
		} else {
			p.Add("release and refresh held if", replies[st.updateReply])
		}
		if st.picks {
			addStmt(p, "purge pick", st.purgePick)
			addList(p, "purge of 3 picked names", st.purge, drivers.For(d), 3)
			p.Add("purge names a statement at most", strconv.Itoa(st.purgeNames))
		} else {
			addStmt(p, "purge", st.purge)
		}
		if st.tx != nil {
			p.Add("purge sent", "inside transaction begin")
		}
		p.Add("deadlock and serialisation failures retried", strconv.FormatBool(st.retries))
		if x := st.tx; x != nil {
			p.Add("transaction begin", x.begin)
			addStmt(p, "transaction read", x.read)
			addStmt(p, "transaction take", x.take)
			addStmt(p, "transaction renew", x.renew)
			addStmt(p, "transaction insert", x.insert)
			addStmt(p, "transaction fence", x.fence)
			addStmt(p, "transaction held", x.held)
		}
		if st.noGuard {
			p.Add("guard", "")
		} else {
			if st.guardWrite {
				p.Add("guard style", "write that changes nothing")
			} else {
				p.Add("guard style", "locking read")
			}
			addStmt(p, "guard", st.guard)
		}
		dr := drivers.For(d)
		addStmt(p, "holder", renderOne(dr, table, holderTmpl))
		addStmt(p, "force release", renderOne(dr, table, forceReleaseTmpl))
		if ln, ok := dr.LeaseTable().(sqldriver.LeaseNotifier); ok && st.tx == nil {
			ch := channelName(DefaultTable)
			n := &notifier{salt: ch + ":"}
			addStmt(p, "release with Listen", renderOne(dr, table, ln.NotifyingRelease(ch, nameChannelPrefix, n.salt)))
			p.Add("listen (name job-1)", ln.Listen(n.nameChannel("job-1")))
			p.Add("unlisten (name job-1)", ln.Unlisten(n.nameChannel("job-1")))
			addStmt(p, "remaining (WaitFree, WatchRelease)", renderOne(dr, table, remainingTmpl))
		}
		p.Add("leases", leasesSQL(dr, table))
		p.Add("table readable", tableReadableSQL(table))
		if query, check := dr.LeaseTable().VersionCheck(); check != nil {
			p.Add("version", query)
		}
	})
}

// replies say in words how a statement's answer comes back.
var replies = map[sqldriver.LeaseReply]string{
	sqldriver.LeaseRow:          "a result row (none when refused)",
	sqldriver.LeaseInsertID:     "the insert id (0 when refused or not held)",
	sqldriver.LeaseOut:          "the OUT parameter (0 when refused)",
	sqldriver.LeaseRowsAffected: "the count of rows matched",
}

// addStmt records a statement and what its bind parameters carry, in
// order.
func addStmt(p *goldenfile.Page, name string, st stmt) {
	p.Add(name, st.SQL)
	args := make([]string, len(st.args))
	for i, a := range st.args {
		args[i] = [...]string{argName: "name", argOwner: "owner", argTTL: "ttl", argFence: "fence (out)", argAge: "age"}[a]
	}
	p.Add(name+" binds", strings.Join(args, ", "))
}

// addList records a statement with a list of n names: its own bind
// parameters, then one per name.
func addList(p *goldenfile.Page, name string, st stmt, ph sqldriver.Phrasing, n int) {
	addStmt(p, name, stmt{SQL: st.withList(ph, n), args: st.args})
	p.Add(name+" then binds", strconv.Itoa(n)+" names")
}
