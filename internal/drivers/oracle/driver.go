// Package oracle is lockplugin's driver for Oracle: every statement lockplugin
// sends to Oracle, one file per statement family (see internal/sqldriver).
package oracle

import (
	"strconv"
	"strings"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Driver phrases lockplugin's statements for Oracle.
type Driver struct{ sqldriver.Standard }

// New returns the driver for d, an Oracle database.
func New(d dialects.Dialect) *Driver { return &Driver{sqldriver.Standard{D: d}} }

// BindVar is :n.
func (*Driver) BindVar(n int) string { return ":" + strconv.Itoa(n) }

// ReusesBindVars is false: Oracle binds :n by position.
func (*Driver) ReusesBindVars() bool { return false }

// BigintBindVar is BindVar.
func (p *Driver) BigintBindVar(n int) string { return p.BindVar(n) }

// QuoteTable folds the schema to upper case before it is quoted: a schema
// is a user, made by CREATE USER app, and Oracle resolves that unquoted
// name as APP; a quoted "app" names a user that does not exist. The table
// part keeps its case, so that it names the table lockplugin's own DDL
// made under that quoted name (and Claim quotes it as GORM's Oracle
// dialector does).
func (p *Driver) QuoteTable(name string) string {
	return sqldriver.QuoteParts(name, p.QuoteIdent, func(schema string) string {
		if sqldriver.PlainIdent(schema) {
			return strings.ToUpper(schema)
		}
		return schema
	})
}

// SelectFirst is SELECT ... FETCH FIRST n ROWS ONLY (Oracle 12c; no
// LIMIT).
func (*Driver) SelectFirst(cols, from, where string, n int) string {
	return "SELECT " + cols + " FROM " + from + " WHERE " + where + " FETCH FIRST " + strconv.Itoa(n) + " ROWS ONLY"
}

// NowMillis is whole days and the time of day of the UTC interval since
// the epoch: CAST(... AS DATE) would round to the second.
func (*Driver) NowMillis() string {
	const since = "(SYS_EXTRACT_UTC(SYSTIMESTAMP) - TIMESTAMP '1970-01-01 00:00:00')"
	return "(EXTRACT(DAY FROM " + since + ") * 86400000 + EXTRACT(HOUR FROM " + since + ") * 3600000 + " +
		"EXTRACT(MINUTE FROM " + since + ") * 60000 + TRUNC(EXTRACT(SECOND FROM " + since + ") * 1000))"
}

// LockWaitStyle is WaitInline: FOR UPDATE WAIT n.
func (p *Driver) LockWaitStyle() sqldriver.WaitStyle {
	if !p.D.Supports(dialects.LockWait) {
		return sqldriver.WaitUnsupported
	}
	return sqldriver.WaitInline
}

// LockWaitSQL is "WAIT n", in whole seconds rounded up.
func (p *Driver) LockWaitSQL(wait time.Duration) string {
	return sqldriver.InlineWait(p.LockWaitStyle(), wait)
}

// ReleaseSavepoint is "": Oracle has no RELEASE SAVEPOINT; a savepoint
// ends with its transaction.
func (*Driver) ReleaseSavepoint(string) string { return "" }
