package clauses

import (
	"database/sql/driver"
	"fmt"
	"regexp"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// hintedKey marks, in a statement's Settings, that the FROM builder placed
// the lock's table hints (SQL Server); the FOR builder refuses to finish
// a locking query without that mark rather than send it unlocked.
const hintedKey = "lockplugin:hinted"

// refusedMarker is written into the SQL of a DryRun statement whose lock
// was refused. GORM builds a subquery (Where("id IN (?)", sub)) as a DryRun
// statement and ignores its error, so without it the outer query would run
// with the subquery's lock silently dropped, or with an empty subquery
// (which SQLite takes as an empty IN list). An unknown function call is an
// error at prepare time on every database; the text is constant, never
// user input. ToSQL of a refused lock shows it too.
const refusedMarker = "lockplugin_refused_lock()"

// refuse fails stmt with err, and in DryRun marks its SQL so that a
// statement embedding it as a subquery fails too. The error itself rides
// along in the statement's Vars, which GORM hands back to the outer
// statement: refusedIn finds it there, so the outer query reports the
// refusal, not only the marker's "no such function".
func refuse(stmt *gorm.Statement, err error) {
	_ = stmt.AddError(err)
	if stmt.DB != nil && stmt.DB.DryRun {
		if stmt.SQL.Len() > 0 {
			stmt.WriteByte(' ')
		}
		stmt.WriteString(refusedMarker)
		stmt.Vars = append(stmt.Vars, refusedVar{err})
	}
}

// refusedVar carries a refused subquery's error in the outer statement's
// Vars. As a driver.Valuer it fails the argument conversion, so database/sql
// sends nothing where the driver converts arguments itself.
type refusedVar struct{ err error }

// Value reports the refusal.
func (r refusedVar) Value() (driver.Value, error) { return nil, r.err }

// refusedIn returns the error of a refused subquery among vars, or nil.
func refusedIn(vars []any) error {
	for _, v := range vars {
		if r, ok := v.(refusedVar); ok {
			return r.err
		}
	}
	return nil
}

// writerLockedKey marks, in a statement's Settings, that the SQLite writer
// lock was taken for the statement's lock; the FOR builder refuses to send
// a locking read on SQLite without that mark.
const writerLockedKey = "lockplugin:writer_locked"

// targetKey holds, in a statement's Settings, the target of the
// registration whose check ran, for the fallback builders.
const targetKey = "lockplugin:target"

func registered(stmt *gorm.Statement) bool { return plugin.Registered(stmt.DB) }

// targetOf returns the target the statement's check used, or one worked out
// from the database with the default configuration.
func targetOf(stmt *gorm.Statement) *target {
	if v, ok := stmt.Settings.Load(targetKey); ok {
		if t, ok := v.(*target); ok {
			return t
		}
	}
	return newTarget(dialects.Of(stmt.DB), Config{})
}

// renderFor writes the whole FOR clause of l: "FOR UPDATE OF "t" NOWAIT",
// "LOCK IN SHARE MODE", or nothing where the lock is table hints (SQL
// Server), which the FROM builder has written.
func renderFor(t *target, b clause.Builder, l lock) {
	stmt, ok := b.(*gorm.Statement)
	if !ok {
		_ = b.AddError(fmt.Errorf("%w: %s built outside a GORM statement", ErrInvalidLock, l.describe(nil)))
		return
	}
	if !registered(stmt) {
		refuse(stmt, plugin.ErrNotRegistered)
		return
	}
	if stmt.DB.Error != nil {
		// An earlier clause failed (on SQL Server, FROM says why); the
		// query will not be sent.
		return
	}
	if err := t.check(stmt, l); err != nil {
		refuse(stmt, err)
		return
	}
	if t.hints || t.writerLock {
		if t.hints {
			if _, ok := stmt.Settings.Load(hintedKey); !ok {
				refuse(stmt, fmt.Errorf("%w: the SQL Server table hints for %s were not written (was the FROM clause builder replaced?); refusing to send the query unlocked", ErrInvalidLock, l.describe(stmt)))
				return
			}
		} else if _, ok := stmt.Settings.Load(writerLockedKey); !ok {
			refuse(stmt, fmt.Errorf("%w: the SQLite writer lock for %s was not taken (did the query bypass lockplugin's callbacks?); refusing to send the query unlocked", ErrInvalidLock, l.describe(stmt)))
			return
		}
		// Statement.Build wrote a separator before this clause, which
		// renders nothing here (SQL Server's hints are in FROM; SQLite's
		// writer lock was taken before the query); drop it.
		if s := stmt.SQL.String(); strings.HasSuffix(s, " ") {
			stmt.SQL.Reset()
			stmt.SQL.WriteString(s[:len(s)-1])
		}
		return
	}
	stmt.WriteString(t.keyword[l.strength])
	if len(l.of) > 0 && t.sendsOf() {
		stmt.WriteString(" OF ")
		for i, name := range l.of {
			if i > 0 {
				stmt.WriteString(", ")
			}
			stmt.WriteQuoted(clause.Table{Name: name})
		}
	}
	if l.noWait {
		stmt.WriteByte(' ')
		stmt.WriteString(t.keyword[dialects.NoWait])
	}
	if l.skipLocked {
		stmt.WriteByte(' ')
		stmt.WriteString(t.keyword[dialects.SkipLocked])
	}
	if l.wait > 0 && t.waitStyle == sqldriver.WaitInline {
		stmt.WriteByte(' ')
		stmt.WriteString(t.dr.LockWaitSQL(l.wait))
	}
}

// renderFromHinted writes a FROM clause with the lock's table hints after
// every table (and alias) in it and in its joins, or, with Of, after the
// named ones only: where the lock is table hints (SQL Server).
func renderFromHinted(t *target, c clause.Clause, stmt *gorm.Statement, l lock) {
	if err := t.check(stmt, l); err != nil {
		refuse(stmt, err)
		return
	}
	from, _ := c.Expression.(clause.From)
	hint := t.tableHint(l)
	stmt.WriteString("FROM ")
	m := newTableMatcher(stmt, l.of)

	tables := from.Tables
	if len(tables) == 0 {
		tables = []clause.Table{{Name: clause.CurrentTable}}
	}
	for i, tb := range tables {
		if i > 0 {
			stmt.WriteByte(',')
		}
		want := m.want(tb)
		if want {
			if err := t.hintable(stmt, tb, l); err != nil {
				refuse(stmt, err)
				return
			}
		}
		stmt.WriteQuoted(tb)
		if want {
			stmt.WriteString(hint)
		}
	}
	for _, j := range from.Joins {
		stmt.WriteByte(' ')
		if j.Expression != nil {
			if len(l.of) == 0 {
				refuse(stmt, &dialects.UnsupportedError{
					Dialect: t.d.String(), Feature: string(l.strength) + " on a JOIN written as SQL",
					Reason: "SQL Server needs the lock hint after each joined table, and a JOIN given as a string cannot take one; join an association (Joins(\"Assoc\")) or name the tables to lock with Of",
				})
				return
			}
			j.Build(stmt)
			continue
		}
		if j.Type != "" {
			stmt.WriteString(string(j.Type))
			stmt.WriteByte(' ')
		}
		stmt.WriteString("JOIN ")
		want := m.want(j.Table)
		if want {
			if err := t.hintable(stmt, j.Table, l); err != nil {
				refuse(stmt, err)
				return
			}
		}
		stmt.WriteQuoted(j.Table)
		if want {
			stmt.WriteString(hint)
		}
		if len(j.ON.Exprs) > 0 {
			stmt.WriteString(" ON ")
			j.ON.Build(stmt)
		} else if len(j.Using) > 0 {
			stmt.WriteString(" USING (")
			for i, col := range j.Using {
				if i > 0 {
					stmt.WriteByte(',')
				}
				stmt.WriteQuoted(col)
			}
			stmt.WriteByte(')')
		}
	}
	if missing := m.unmatched(); len(missing) > 0 {
		refuse(stmt, fmt.Errorf("%w: Of names %s, which the query's FROM and JOINs do not contain", ErrInvalidLock, strings.Join(missing, ", ")))
		return
	}
	stmt.Settings.Store(hintedKey, true)
}

// sqlServerIdent is one SQL Server identifier, bracketed, double-quoted,
// back-quoted (as some dialectors quote) or plain.
const sqlServerIdent = `(?:\[(?:[^\]]|\]\])+\]|"(?:[^"]|"")+"|` + "`(?:[^`]|``)+`" + `|[\p{L}_#@][\p{L}\p{N}_#@$]*)`

// oneTable matches a table expression that names exactly one table,
// optionally schema-qualified and aliased: "jobs", "dbo.jobs j",
// "[jobs] AS [j]". A hint written after anything else (a comma list, a JOIN
// spelled out in Table, a subquery) would lock only the last table or be a
// syntax error.
var oneTable = regexp.MustCompile(`^\s*` + sqlServerIdent + `(?:\s*\.\s*` + sqlServerIdent + `){0,3}(?:\s+(?:(?i:AS)\s+)?` + sqlServerIdent + `)?\s*$`)

// hintable returns why the SQL Server hint cannot follow tb, or nil. A
// table GORM names and quotes itself always takes it; a table expression
// given as SQL (Table("..."), a raw clause.Table) must be one table.
func (t *target) hintable(stmt *gorm.Statement, tb clause.Table, l lock) error {
	expr := ""
	switch {
	case tb.Name == clause.CurrentTable && stmt.TableExpr != nil:
		if len(stmt.TableExpr.Vars) > 0 {
			return &dialects.UnsupportedError{
				Dialect: t.d.String(), Feature: string(l.strength) + " on a derived table",
				Reason: "SQL Server takes lock hints on tables, not on a subquery given to Table; lock inside the subquery's own query",
			}
		}
		expr = stmt.TableExpr.SQL
	case tb.Raw && tb.Name != clause.CurrentTable:
		expr = strings.TrimSpace(tb.Name + " " + tb.Alias)
	default:
		return nil
	}
	if oneTable.MatchString(expr) {
		return nil
	}
	return &dialects.UnsupportedError{
		Dialect: t.d.String(), Feature: string(l.strength) + " on a table expression that is not one table",
		Reason: fmt.Sprintf("SQL Server needs the lock hint after each table, and %q is not a single table with an optional alias "+
			"(a list, a JOIN or a subquery written as SQL would be locked only in part, or not at all); "+
			"give Table one table and add the others with Joins, or name the tables to lock with Of", expr),
	}
}

// tableMatcher decides which tables of a SQL Server FROM clause get the
// hint: all of them, or those Of names (by table name or alias,
// case-insensitively, as SQL Server compares identifiers by default).
type tableMatcher struct {
	stmt    *gorm.Statement
	of      []string
	matched []bool
}

func newTableMatcher(stmt *gorm.Statement, of []string) *tableMatcher {
	return &tableMatcher{stmt: stmt, of: of, matched: make([]bool, len(of))}
}

func (m *tableMatcher) want(tb clause.Table) bool {
	if len(m.of) == 0 {
		return true
	}
	names := []string{tb.Name, tb.Alias}
	if tb.Name == clause.CurrentTable {
		names = append(names, m.stmt.Table)
		if m.stmt.Schema != nil {
			names = append(names, m.stmt.Schema.Table)
		}
	}
	hit := false
	for i, o := range m.of {
		for _, n := range names {
			if n != "" && (strings.EqualFold(n, o) || (o == clause.CurrentTable && tb.Name == clause.CurrentTable)) {
				m.matched[i] = true
				hit = true
			}
		}
	}
	return hit
}

func (m *tableMatcher) unmatched() []string {
	var out []string
	for i, ok := range m.matched {
		if !ok {
			out = append(out, fmt.Sprintf("%q", m.of[i]))
		}
	}
	return out
}

// writing reports whether stmt is an UPDATE or a DELETE, whose FROM clause
// (SQL Server builds one for DELETE) must not take a lock's hints: GORM
// renders no lock on a write for any other database, and READPAST there
// would silently leave locked rows undeleted.
func writing(stmt *gorm.Statement) bool {
	_, del := stmt.Clauses["DELETE"]
	_, upd := stmt.Clauses["UPDATE"]
	return del || upd
}

// statementLock returns the lock carried by stmt's FOR clause, if any.
func statementLock(stmt *gorm.Statement) (lock, bool) {
	c, ok := stmt.Clauses[clauseName]
	if !ok {
		return lock{}, false
	}
	l, _, ok := lockFromClause(c)
	return l, ok
}

// buildForFallback is set as the Builder of every FOR clause holding a
// lock. It runs when the dialector's "FOR" builder replaced the one
// Register installed and hands the clause to Clause.Build, as every
// dialector does for expressions it does not know.
func buildForFallback(c clause.Clause, b clause.Builder) {
	if l, _, ok := lockFromClause(c); ok {
		if stmt, ok := b.(*gorm.Statement); ok {
			renderFor(targetOf(stmt), b, l)
			return
		}
	}
	c.Builder = nil
	c.Build(b)
}

// buildFromFallback is set as the Builder of a statement's FROM clause when
// it carries a lock that is table hints (SQL Server), for the same reason
// as buildForFallback.
func buildFromFallback(c clause.Clause, b clause.Builder) {
	if stmt, ok := b.(*gorm.Statement); ok && !writing(stmt) {
		if l, ok := statementLock(stmt); ok {
			if t := targetOf(stmt); t.hints {
				renderFromHinted(t, c, stmt, l)
				return
			}
		}
	}
	c.Builder = nil
	c.Build(b)
}
