package sqlstore

import (
	"database/sql"
	"reflect"
	"strings"
)

// contextDrivers are the database/sql drivers, by package path, known to
// end a statement when its context ends (pgx cancels the query and closes
// the connection, lib/pq sends a cancel request, go-sql-driver/mysql
// closes the connection), so that every call of the store returns by its
// context's deadline.
var contextDrivers = []string{
	"github.com/jackc/pgx/",
	"github.com/lib/pq",
	"github.com/go-sql-driver/mysql",
}

// HonoursContext reports whether every call of the store ends by its
// context's deadline: true when the store's pool is a *sql.DB on a driver
// known to honour contexts (pgx, lib/pq, go-sql-driver/mysql). lease.Manager
// then runs the store's calls on the caller's goroutine instead of one of
// its own (lease.ContextHonourer). Any other pool or driver, a wrapped one
// included, answers false, and the Manager keeps bounding the calls
// itself; so does TiDB, whose transactions are rolled back on a context of
// their own that may outlast the caller's.
func (s *Store) HonoursContext() bool {
	if s.usable() != nil || s.stmts.tidb != nil {
		return false
	}
	db, ok := s.pool.(*sql.DB)
	if !ok {
		return false
	}
	t := reflect.TypeOf(db.Driver())
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return false
	}
	pkg := t.PkgPath()
	for _, p := range contextDrivers {
		if strings.HasPrefix(pkg, p) {
			return true
		}
	}
	return false
}
