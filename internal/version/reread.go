package version

import (
	"database/sql"
	"reflect"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/plugin"
)

// reread reads the version row r holds now, on the connection (and in the
// transaction) the failed write used, so that a read replica's lag cannot
// mislead it; found is false when the row no longer exists, or is
// soft-deleted (unless the write was Unscoped). A row guarded by the
// caller's conditions (st.byCond) is found by those conditions, and its
// primary key is returned too. It runs only after a guarded write failed.
//
// Inside a transaction the read is the database's VersionRead (a locking
// read on MySQL and MariaDB, LOCK IN SHARE MODE or FOR SHARE; FOR UPDATE on
// TiDB): a plain SELECT there reads the transaction's REPEATABLE READ
// snapshot, which still shows the row as it was before the newer write (or
// the delete) that made the guard fail. PostgreSQL (READ COMMITTED) and
// SQLite (one writer) read the latest committed row anyway.
func reread(db *gorm.DB, st *state, r row) (cur Version, pk []any, found bool, err error) {
	stmt, f := db.Statement, st.field
	// GORM renders the query, soft-delete scope included, without sending
	// it; it is then sent on the failed statement's own connection.
	q := db.Session(&gorm.Session{NewDB: true, DryRun: true, Logger: logger.Discard}).
		Model(reflect.New(stmt.Schema.ModelType).Interface())
	q.Statement.Table, q.Statement.TableExpr = stmt.Table, stmt.TableExpr
	if stmt.Unscoped {
		q = q.Unscoped()
	}
	cols := []string{f.DBName}
	if r.pk != nil {
		conds := make([]clause.Expression, len(stmt.Schema.PrimaryFields))
		for i, pf := range stmt.Schema.PrimaryFields {
			conds[i] = clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: pf.DBName}, Value: r.pk[i]}
		}
		q = q.Where(clause.And(conds...))
	} else {
		// The caller's own conditions, the guard's taken out by check.
		if c, ok := stmt.Clauses["WHERE"]; ok {
			if w, ok := c.Expression.(clause.Where); ok {
				q.Statement.AddClause(clause.Where{Exprs: w.Exprs})
			}
		}
		cols = append(cols, stmt.Schema.PrimaryFieldDBNames...)
		q = q.Limit(1)
	}
	var discard []map[string]interface{}
	built := q.Select(cols).Find(&discard)
	if built.Error != nil {
		return 0, nil, false, built.Error
	}
	query, vars := built.Statement.SQL.String(), built.Statement.Vars
	if plugin.InTransaction(stmt.ConnPool) {
		query = drivers.For(dialects.Of(db)).Reread().VersionRead(query)
	}

	begin := time.Now()
	defer func() {
		db.Logger.Trace(stmt.Context, begin, func() (string, int64) {
			n := int64(0)
			if found {
				n = 1
			}
			return db.Dialector.Explain(query, vars...), n
		}, err)
	}()
	rows, err := stmt.ConnPool.QueryContext(stmt.Context, query, vars...)
	if err != nil {
		return 0, nil, false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return 0, nil, false, rows.Err()
	}
	var v sql.NullInt64
	dest := []any{&v}
	var keys []reflect.Value
	if r.pk == nil {
		for _, pf := range stmt.Schema.PrimaryFields {
			k := reflect.New(pf.IndirectFieldType)
			keys = append(keys, k)
			dest = append(dest, k.Interface())
		}
	}
	if err := rows.Scan(dest...); err != nil {
		return 0, nil, false, err
	}
	for _, k := range keys {
		pk = append(pk, k.Elem().Interface())
	}
	return fromNull(v.Int64, v.Valid), pk, true, rows.Err()
}
