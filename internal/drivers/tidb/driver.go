// Package tidb is lockplugin's driver for TiDB: the MySQL driver, with the
// statements TiDB needs otherwise, one file per statement family (see
// internal/sqldriver).
package tidb

import (
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers/mysql"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Driver phrases lockplugin's statements for TiDB.
type Driver struct{ *mysql.Driver }

// New returns the driver for d, a TiDB database.
func New(d dialects.Dialect) *Driver {
	t := &Driver{}
	t.Driver = mysql.Embedded(d, t)
	return t
}

// LatestRead is FOR UPDATE: TiDB refuses shared locks, and an exclusive
// one, in its pessimistic transactions, reads the latest commit.
func (*Driver) LatestRead() string { return " FOR UPDATE" }

// LockWaitStyle is WaitInline: TiDB ignores SET_VAR(innodb_lock_wait_timeout
// = n) (measured: a waiter with SET_VAR(innodb_lock_wait_timeout=1) waited
// 7.5 s, until the holder let go) and takes FOR UPDATE WAIT n (1205 after
// 1.02 s for WAIT 1).
func (t *Driver) LockWaitStyle() sqldriver.WaitStyle {
	if !t.Dialect().Supports(dialects.LockWait) {
		return sqldriver.WaitUnsupported
	}
	return sqldriver.WaitInline
}
