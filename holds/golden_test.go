package holds

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/goldenfile"
)

// TestHoldsGolden renders every statement this package sends, as it sends
// it (bound), on every database, into internal/drivers/<db>/testdata/
// holds.golden: a change to one database's SQL shows in its file only. A
// database that cannot run holds (the capability gate refuses it) renders
// nothing.
func TestHoldsGolden(t *testing.T) {
	goldenfile.Check(t, "holds", func(d dialects.Dialect, p *goldenfile.Page) {
		if !d.Supports(dialects.CapacityHolds) {
			return
		}
		for _, table := range []string{"app_holds", "billing.holds"} {
			renderHolds(p, newStatements(d, table), "["+table+"] ")
		}
		for _, res := range [][2]string{{"seats", "id"}, {"sales.seats", "seat_no"}} {
			st := newStatements(d, DefaultTable)
			lock, read := st.lockStatements(res[0], res[1])
			name := "[resource " + res[0] + "." + res[1] + "] "
			p.Add(name+"lock resource row", lock)
			p.Add(name+"read resource row under the lock", read)
			p.Add(name+"read resource row (Available, IsFull)", st.readStatement(res[0], res[1]))
		}
	})
}

func renderHolds(p *goldenfile.Page, st statements, n string) {
	q := st.compiled()
	add := func(name, sql string) { p.Add(n+name, sql) }
	add("count", q.count)
	add("count in a caller's transaction", q.countShare)
	add("one-statement grant", q.grant)
	add("one-statement grant used", strconv.FormatBool(st.oneStatementGrant()))
	add("insert", q.insert)
	add("insert answers the id as a row", strconv.FormatBool(st.insertAnswersRow()))
	add("by id", q.byID)
	add("by id, latest", q.byIDLatest)
	add("active by id", q.activeByID)
	add("active for holder", q.activeFor)
	add("count active", q.countActive)
	add("release", q.release)
	add("release returning", q.releaseReturning)
	add("released at", q.relAt)
	add("released at, latest", q.relAtLatest)
	add("force release", q.forceRelease)
	add("force release holder", q.forceReleaseHolder)
	add("expired unmarked", q.expiredUnmarked)
	add("mark expired", q.markExpired)
	add("extend", q.extend)
	add("extend forever", q.extendForever)
	add("isolation", q.isolation)
	for _, level := range []string{"read committed", "read uncommitted", "repeatable read", "serializable", "2", "5", "REPEATABLE-READ"} {
		refused := "accepted"
		if st.snapshotIsolation(level) {
			refused = "refused as " + st.isolationName(level)
		}
		add("caller's isolation "+strconv.Quote(level), refused)
	}
	add("own transactions at READ COMMITTED", strconv.FormatBool(st.ownReadCommitted()))
	add("savepoint", q.savepoint)
	add("rollback to savepoint", q.rollbackTo)
	add("release savepoint", q.releaseSav)
	add("create table", strings.Join(st.createTable(), "\n"))
	add("migrate lock", bind(st.dr, st.migrateLock()))
	add("migrate lock key", fmt.Sprintf("%T %v", st.migrateKey(), st.migrateKey()))
	add("purge", bind(st.dr, st.purge(PurgeBatch)))
	add("purge binds the age four times", strconv.FormatBool(st.purgeRepeats()))
}
