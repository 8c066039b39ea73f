// Package mysql is lockplugin's driver for MySQL: every statement
// lockplugin sends to MySQL, one file per statement family (see
// internal/sqldriver). MariaDB and TiDB, which speak MySQL's protocol and
// most of its SQL, embed this driver and override what differs.
package mysql

import (
	"strconv"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Driver phrases lockplugin's statements for MySQL.
//
// Go embedding does not override: a method of this driver that called its
// own LockSQL would never reach MariaDB's. So every method that phrases
// through another goes through Outer, the driver that embeds this one (or
// this one), and a family reads its phrasing from Outer too.
type Driver struct {
	d     dialects.Dialect
	outer sqldriver.Driver
}

// New returns the driver for d, a MySQL database.
func New(d dialects.Dialect) *Driver {
	m := &Driver{d: d}
	m.outer = m
	return m
}

// Embedded returns the MySQL driver for d as the base of outer, a driver
// that embeds it and overrides some of its methods.
func Embedded(d dialects.Dialect, outer sqldriver.Driver) *Driver {
	return &Driver{d: d, outer: outer}
}

// Outer is the driver this one is the base of, or itself.
func (m *Driver) Outer() sqldriver.Driver { return m.outer }

// Dialect is the database the driver was made for.
func (m *Driver) Dialect() dialects.Dialect { return m.d }

// BindVar is ?.
func (*Driver) BindVar(int) string { return "?" }

// ReusesBindVars is false: ? has no number.
func (*Driver) ReusesBindVars() bool { return false }

// BigintBindVar is ?.
func (*Driver) BigintBindVar(int) string { return "?" }

// QuoteIdent quotes with backticks.
func (*Driver) QuoteIdent(name string) string { return sqldriver.Quote(name, "`", "`") }

// QuoteTable quotes schema and table.
func (m *Driver) QuoteTable(name string) string {
	return sqldriver.QuoteParts(name, m.outer.QuoteIdent, nil)
}

// NowMillis reads UTC_TIMESTAMP(6), which ignores the session time zone
// (that could otherwise jump an hour at a daylight-saving change).
func (*Driver) NowMillis() string {
	return "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"
}

// SelectFirst is SELECT ... LIMIT n.
func (*Driver) SelectFirst(cols, from, where string, n int) string {
	return "SELECT " + cols + " FROM " + from + " WHERE " + where + " LIMIT " + strconv.Itoa(n)
}

// LockSQL is the feature's own keywords; a shared lock is LOCK IN SHARE
// MODE before MySQL 8.0.1.
func (m *Driver) LockSQL(f dialects.Feature) string {
	if !m.d.Supports(f) {
		return ""
	}
	if f == dialects.ForShare && !m.d.AtLeast(8, 0, 1) {
		return "LOCK IN SHARE MODE"
	}
	return string(f)
}

// LockClauseSQL is LockSQL.
func (m *Driver) LockClauseSQL(f dialects.Feature) string { return m.outer.LockSQL(f) }

// LatestRead is a shared lock: a plain SELECT in a REPEATABLE READ
// transaction reads its snapshot, a locking read the latest commit. It is
// phrased as the protocol's database would, whatever an engine's own rows
// allow.
func (m *Driver) LatestRead() string {
	plain := m.d
	plain.Engine, plain.EngineVersion = dialects.NoEngine, ""
	return " " + New(plain).LockSQL(dialects.ForShare)
}

// LockWaitStyle is WaitSetting: SET_VAR(innodb_lock_wait_timeout = n).
func (m *Driver) LockWaitStyle() sqldriver.WaitStyle {
	if !m.d.Supports(dialects.LockWait) {
		return sqldriver.WaitUnsupported
	}
	return sqldriver.WaitSetting
}

// LockWaitSQL is "WAIT n" where the outer driver bounds waits inline, ""
// here.
func (m *Driver) LockWaitSQL(wait time.Duration) string {
	return sqldriver.InlineWait(m.outer.LockWaitStyle(), wait)
}

// Savepoint is SAVEPOINT name.
func (*Driver) Savepoint(name string) string { return "SAVEPOINT " + name }

// RollbackTo is ROLLBACK TO SAVEPOINT name.
func (*Driver) RollbackTo(name string) string { return "ROLLBACK TO SAVEPOINT " + name }

// ReleaseSavepoint is RELEASE SAVEPOINT name.
func (*Driver) ReleaseSavepoint(name string) string { return "RELEASE SAVEPOINT " + name }
