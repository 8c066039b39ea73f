package advisory

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"reflect"
	"time"

	"gorm.io/gorm"
)

// killTimeout bounds the KILL QUERY of a cancelled MySQL wait, which runs
// on a context detached from the cancelled one.
const killTimeout = 2 * time.Second

// killWait ends a GET_LOCK wait whose client went away: the driver closes
// the connection when ctx ends, but the server may keep the thread waiting
// (and let it take the lock later, for a moment) until it notices.
//
// The KILL runs on a connection of its own, opened from the pool's driver
// with the DSN the pool was opened with, so that it never queues for the
// pool: the wait being cancelled may hold the pool's last connection, and
// everyone else may be waiting for one too. Where the DSN is not known (a
// pool handed to GORM ready-made, a dbresolver source) it falls back to the
// pool, bounded by killTimeout.
func (l *Lock) killWait(ctx context.Context, pool *sql.DB, id int64) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	var q querier = pool
	if c := connector(pool, ownDSN(l.source, pool)); c != nil {
		own := sql.OpenDB(c)
		own.SetMaxIdleConns(0)
		defer own.Close()
		q = own
	}
	// The thread may be gone already ("unknown thread id"): fine.
	_ = runner{db: l.run.db, q: q}.query(kctx, stmt(l.fam.Kill(id)))
}

// connector returns a connector for a connection to the same server as
// pool, outside pool; nil when it cannot be had.
func connector(pool *sql.DB, dsn string) driver.Connector {
	if dsn == "" {
		return nil
	}
	dc, ok := pool.Driver().(driver.DriverContext)
	if !ok {
		return nil
	}
	c, err := dc.OpenConnector(dsn)
	if err != nil {
		return nil
	}
	return c
}

// ownDSN returns the DSN db's dialector opened pool with, when pool is db's
// own pool; "" otherwise. GORM's MySQL dialector keeps it in an exported
// DSN field (through its embedded Config); database/sql offers no way to
// open a connection outside a pool's limit from the pool itself.
func ownDSN(db *gorm.DB, pool *sql.DB) string {
	if db == nil || db.Config == nil || db.Dialector == nil {
		return ""
	}
	own, _ := db.Config.ConnPool.(*sql.DB)
	if g, ok := db.Config.ConnPool.(gorm.GetDBConnector); ok && own == nil {
		own, _ = g.GetDBConn()
	}
	if own != pool {
		return ""
	}
	v := reflect.ValueOf(db.Dialector)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	f, ok := v.Type().FieldByName("DSN")
	if !ok || f.Type.Kind() != reflect.String {
		return ""
	}
	fv, err := v.FieldByIndexErr(f.Index)
	if err != nil {
		return ""
	}
	return fv.String()
}
