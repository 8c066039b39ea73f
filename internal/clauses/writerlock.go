package clauses

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/plugin"
)

// SQLite has no row locks, but one writer per database. With
// Config.SQLiteWriterLock a locking read first takes that writer lock, by a
// write that changes nothing (the driver's WriterLock().Take: DELETE FROM
// the query's table WHERE 0; internal/drivers/sqlite says why it works).

// writerLockTable matches a table expression that names one table, with an
// optional schema and alias; group 1 is the table, as written.
var writerLockTable = regexp.MustCompile(`^\s*(` + sqlServerIdent + `(?:\s*\.\s*` + sqlServerIdent + `)?)(?:\s+(?:(?i:AS)\s+)?` + sqlServerIdent + `)?\s*$`)

// takeWriterLock takes the SQLite writer lock for l on stmt's connection.
// With NoWait it sets the connection's busy timeout to 0 for that one
// statement, so that a writer lock held by someone else fails at once with
// ErrLockNotAvailable; the timeout is put back whatever happens.
func (t *target) takeWriterLock(stmt *gorm.Statement, l lock) error {
	table, err := t.writerLockTarget(stmt, l)
	if err != nil {
		return err
	}
	wl := t.rl.WriterLock()
	q := wl.Take(table)
	ctx, pool := stmt.Context, stmt.ConnPool
	if !l.noWait {
		_, err := pool.ExecContext(ctx, q)
		return err
	}
	if !plugin.InTransaction(pool) {
		// busy_timeout is per connection: outside a transaction the three
		// statements below could each run on a different one.
		return &dialects.UnsupportedError{
			Dialect: t.d.String(), Feature: l.describe(stmt) + " outside a transaction",
			Reason: "NOWAIT sets the connection's busy timeout to 0 while the writer lock is taken, which needs the transaction's one connection",
		}
	}
	var prev int
	if err := pool.QueryRowContext(ctx, wl.ReadBusyTimeout()).Scan(&prev); err != nil {
		return err
	}
	if _, err := pool.ExecContext(ctx, wl.SetBusyTimeout(0)); err != nil {
		return err
	}
	_, err = pool.ExecContext(ctx, q)
	// Put the timeout back even when ctx has ended: the connection goes
	// back to the pool, and a timeout of 0 there would fail every later
	// writer that has to wait.
	_, restoreErr := pool.ExecContext(context.WithoutCancel(ctx), wl.SetBusyTimeout(prev))
	if err != nil {
		if dialects.IsRetryable(err) { // SQLITE_BUSY, BUSY_SNAPSHOT, LOCKED
			return &dialects.LockNotAvailableError{Dialect: t.d.String(), Err: err}
		}
		return err
	}
	return restoreErr
}

// writerLockTarget returns the quoted table the no-op write goes to: the
// query's one named table.
func (t *target) writerLockTarget(stmt *gorm.Statement, l lock) (string, error) {
	expr := ""
	if fc, ok := stmt.Clauses["FROM"]; ok {
		if from, ok := fc.Expression.(clause.From); ok && len(from.Tables) > 0 && from.Tables[0].Name != clause.CurrentTable {
			tb := from.Tables[0]
			if !tb.Raw {
				return stmt.Quote(clause.Table{Name: tb.Name}), nil
			}
			expr = tb.Name
		}
	}
	if expr == "" && stmt.TableExpr != nil {
		if len(stmt.TableExpr.Vars) > 0 {
			expr = stmt.TableExpr.SQL + " (with arguments)"
		} else {
			expr = stmt.TableExpr.SQL
		}
	}
	if expr != "" {
		if m := writerLockTable.FindStringSubmatch(expr); m != nil {
			return m[1], nil
		}
	} else if stmt.Table != "" {
		return stmt.Quote(stmt.Table), nil
	}
	return "", &dialects.UnsupportedError{
		Dialect: t.d.String(), Feature: l.describe(stmt) + " on " + strings.TrimSpace("a table expression "+strconvQuote(expr)),
		Reason: "SQLiteWriterLock takes the writer lock with a write to the query's table that changes nothing, so the query must read one named table (a model, or Table(\"jobs\"), optionally with an alias)",
	}
}

func strconvQuote(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}
