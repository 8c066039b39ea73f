package version

import (
	"database/sql"
	"reflect"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"
)

// reread reads the version row r holds now, on the connection (and in the
// transaction) the failed write used, so that a read replica's lag or a
// snapshot cannot mislead it. found is false when the row no longer exists,
// or is soft-deleted (unless the write was Unscoped). It runs only after a guarded write has failed.
func reread(db *gorm.DB, f *schema.Field, r row) (cur Version, found bool, err error) {
	stmt := db.Statement
	// GORM renders the query, soft-delete scope included, without sending
	// it; it is then sent on the failed statement's own connection.
	q := db.Session(&gorm.Session{NewDB: true, DryRun: true, Logger: logger.Discard}).
		Model(reflect.New(stmt.Schema.ModelType).Interface())
	q.Statement.Table, q.Statement.TableExpr = stmt.Table, stmt.TableExpr
	if stmt.Unscoped {
		q = q.Unscoped()
	}
	conds := make([]clause.Expression, len(stmt.Schema.PrimaryFields))
	for i, pf := range stmt.Schema.PrimaryFields {
		conds[i] = clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: pf.DBName}, Value: r.pk[i]}
	}
	var discard []map[string]interface{}
	built := q.Select(f.DBName).Where(clause.And(conds...)).Find(&discard)
	if built.Error != nil {
		return 0, false, built.Error
	}
	query, vars := built.Statement.SQL.String(), built.Statement.Vars

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
		return 0, false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return 0, false, rows.Err()
	}
	var v sql.NullInt64
	if err := rows.Scan(&v); err != nil {
		return 0, false, err
	}
	return Version(v.Int64), true, rows.Err()
}
