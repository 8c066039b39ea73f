// Package drivers chooses a database's driver: For is the one place in
// lockplugin that asks which database a connection is. Each database's
// statements live in its own folder here (postgres, mysql, mariadb, tidb,
// sqlserver, oracle, sqlite), behind the family interfaces of
// internal/sqldriver.
package drivers

import (
	"sync"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers/mariadb"
	"github.com/lockplugin/lockplugin/internal/drivers/mysql"
	"github.com/lockplugin/lockplugin/internal/drivers/oracle"
	"github.com/lockplugin/lockplugin/internal/drivers/postgres"
	"github.com/lockplugin/lockplugin/internal/drivers/sqlite"
	"github.com/lockplugin/lockplugin/internal/drivers/sqlserver"
	"github.com/lockplugin/lockplugin/internal/drivers/tidb"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// For returns the driver of the database d describes. A look-alike engine
// gets its own driver where it has one (TiDB), else its protocol's (a
// CockroachDB or YugabyteDB is phrased as PostgreSQL, and the capability
// matrix, which starts empty for an engine, refuses what it has not been
// shown to do). A database lockplugin does not know gets a driver with no
// families, whose phrasing is only what the capability gate's errors need.
func For(d dialects.Dialect) sqldriver.Driver {
	if v, ok := cache.Load(d); ok {
		return v.(sqldriver.Driver)
	}
	v, _ := cache.LoadOrStore(d, newDriver(d))
	return v.(sqldriver.Driver)
}

// cache memoises For, a pure function of a comparable Dialect, so that a
// statement costs a map lookup rather than a driver's allocation. It holds
// derived data only: nothing a test would need to reset.
var cache sync.Map

func newDriver(d dialects.Dialect) sqldriver.Driver {
	if d.Engine == dialects.TiDB {
		return tidb.New(d)
	}
	switch d.Kind {
	case dialects.Postgres:
		return postgres.New(d)
	case dialects.MySQL:
		return mysql.New(d)
	case dialects.MariaDB:
		return mariadb.New(d)
	case dialects.SQLServer:
		return sqlserver.New(d)
	case dialects.Oracle:
		return oracle.New(d)
	case dialects.SQLite:
		return sqlite.New(d)
	default:
		return unknown{sqldriver.Standard{D: d}}
	}
}
