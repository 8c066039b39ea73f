// Package mariadb is lockplugin's driver for MariaDB: the MySQL driver, with
// the statements MariaDB phrases otherwise, one file per statement family
// (see internal/sqldriver).
package mariadb

import (
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers/mysql"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Driver phrases lockplugin's statements for MariaDB.
type Driver struct{ *mysql.Driver }

// New returns the driver for d, a MariaDB database.
func New(d dialects.Dialect) *Driver {
	m := &Driver{}
	m.Driver = mysql.Embedded(d, m)
	return m
}

// LockSQL is MySQL's, except a shared lock: LOCK IN SHARE MODE (MariaDB
// has no FOR SHARE).
func (m *Driver) LockSQL(f dialects.Feature) string {
	if f == dialects.ForShare && m.Dialect().Supports(f) {
		return "LOCK IN SHARE MODE"
	}
	return m.Driver.LockSQL(f)
}

// LatestRead is LOCK IN SHARE MODE.
func (m *Driver) LatestRead() string { return " " + m.LockSQL(dialects.ForShare) }

// LockWaitStyle is WaitInline: FOR UPDATE WAIT n.
func (m *Driver) LockWaitStyle() sqldriver.WaitStyle {
	if !m.Dialect().Supports(dialects.LockWait) {
		return sqldriver.WaitUnsupported
	}
	return sqldriver.WaitInline
}
