package lockplugin

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"sync"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
	"github.com/lockplugin/lockplugin/observe"
)

// claimIndexChecks remembers the tables whose indexes Claim has checked,
// per pool (*sql.DB), so that the catalog is read once per table.
var claimIndexChecks sync.Map // claimIndexKey -> struct{}

type claimIndexKey struct {
	pool  *sql.DB
	table string
}

// ForgetClaimIndexChecks makes Claim check each table's indexes again on
// its next call (after a migration added the index, say). Claim checks a
// table once per *gorm.DB pool, and only with an Observer set
// (WithObserver).
func ForgetClaimIndexChecks() {
	claimIndexChecks.Range(func(k, _ any) bool {
		claimIndexChecks.Delete(k)
		return true
	})
}

// checkIndex reports, once per table and pool, through the plugin's
// Observer (observe.Claim, observe.Warning), a claim whose where no index
// of the table can serve: without one, every claim reads (and on InnoDB
// locks) every row before the first queued one, which on a drained queue
// is most of the table. It reads the catalog outside any transaction and
// never fails the claim: a check it cannot make is not reported.
func (c *claim) checkIndex(db *gorm.DB) {
	o := plugin.Observer(db)
	if o == nil || c.userWhere == nil || plugin.InTransaction(db.Statement.ConnPool) {
		return
	}
	sqlDB, err := db.DB()
	if err != nil {
		return
	}
	key := claimIndexKey{sqlDB, c.tableName}
	if _, done := claimIndexChecks.LoadOrStore(key, struct{}{}); done {
		return
	}
	cols, ok := whereColumns(c.userWhere, nil)
	if !ok || len(cols) == 0 {
		return // a raw condition (gorm.Expr): no columns to go by
	}
	leading, err := leadingIndexColumns(db.Statement.Context, sqlDB, c.cl, c.tableName)
	if err != nil || leading == nil {
		return
	}
	leading[strings.ToLower(c.key.DBName)] = true // the primary key's index
	for _, col := range cols {
		if leading[strings.ToLower(col)] {
			return
		}
	}
	sort.Strings(cols)
	o.Observe(observe.Event{Mechanism: observe.Claim, Kind: observe.Warning, Name: c.tableName,
		Err: fmt.Errorf("lockplugin: Claim on %s table %s: no index starts with a column of the claim's condition (%s), so each claim scans the table from its first row (on a drained queue, every finished job; InnoDB locks each row it reads); fix: %s",
			c.d, c.tableName, strings.Join(cols, ", "), claimIndexAdvice(c.cl, c.tableName, cols[0], c.key.DBName))})
}

// ClaimIndexAdvice returns the index statement that serves a claim of
// table whose condition tests column (the job state, say) and whose rows
// are taken in key order: the one the README's "Claiming work" section
// leads with, and the fix that Claim's warning and lockcheck doctor print.
func ClaimIndexAdvice(kind dialects.Kind, table, column, key string) string {
	return claimIndexAdvice(drivers.For(dialects.Dialect{Kind: kind}).Claim(), table, column, key)
}

// claimIndexAdvice is ClaimIndexAdvice in cl's words: the plain CREATE
// INDEX where cl is nil (a database that cannot claim).
func claimIndexAdvice(cl sqldriver.Claim, table, column, key string) string {
	idx := "idx_" + strings.ReplaceAll(table, ".", "_") + "_" + column + "_" + key
	if cl == nil {
		return sqldriver.ClaimIndex(idx, table, column, key)
	}
	return cl.IndexAdvice(idx, table, column, key)
}

// whereColumns lists the columns that where compares, and false when
// where holds a condition it cannot read (raw SQL, OR).
func whereColumns(where clause.Expression, cols []string) ([]string, bool) {
	name := func(c any) (string, bool) {
		switch v := c.(type) {
		case clause.Column:
			return v.Name, v.Name != "" && !v.Raw
		case string:
			return v, v != ""
		}
		return "", false
	}
	add := func(c any) ([]string, bool) {
		n, ok := name(c)
		if !ok {
			return cols, false
		}
		return append(cols, n), true
	}
	switch w := where.(type) {
	case clause.Eq:
		return add(w.Column)
	case clause.Neq:
		return add(w.Column)
	case clause.Gt:
		return add(w.Column)
	case clause.Gte:
		return add(w.Column)
	case clause.Lt:
		return add(w.Column)
	case clause.Lte:
		return add(w.Column)
	case clause.IN:
		return add(w.Column)
	case clause.Like:
		return add(w.Column)
	case clause.AndConditions:
		for _, e := range w.Exprs {
			var ok bool
			if cols, ok = whereColumns(e, cols); !ok {
				return cols, false
			}
		}
		return cols, true
	case clause.Where:
		return whereColumns(clause.AndConditions(w), cols)
	}
	return cols, false
}

// leadingIndexColumns returns the first column of each index of table
// (lower case), read from the catalog on db's pool; nil where lockplugin
// does not read this database's catalog.
func leadingIndexColumns(ctx context.Context, sqlDB *sql.DB, cl sqldriver.Claim, table string) (map[string]bool, error) {
	q, args := cl.LeadingIndexColumns(table)
	if q == "" {
		return nil, nil
	}
	rows, err := sqlDB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var col string
		if err := rows.Scan(&col); err != nil {
			return nil, err
		}
		out[strings.ToLower(col)] = true
	}
	return out, rows.Err()
}
