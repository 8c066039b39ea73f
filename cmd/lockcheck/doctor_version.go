package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// versionColumnNames are the column names doctor takes for lockplugin
// version columns: the default of an embedded lockplugin.Version, and the
// name the README uses for a named one. A version field given another
// column name is not looked at.
var versionColumnNames = []string{"version", "lock_version"}

// versionColumn is a nullable integer column that may be a lockplugin
// version column.
type versionColumn struct {
	schema, table, column string
}

// nullVersions reports the tables whose version column still holds NULLs:
// rows that existed before the column was added without a default (by hand,
// or by the AutoMigrate of a lockplugin before it made the column NOT NULL
// DEFAULT 1). lockplugin guards such rows (a NULL is read as NullVersion and
// written as "version IS NULL"), but StrictVersion refuses a write of one
// that was not read first, and AutoMigrate cannot make the column NOT NULL
// while they remain.
//
// It is a heuristic: it looks at the nullable integer columns named
// version or lock_version of the current database (PostgreSQL: the schemas
// on the search_path) and counts their NULLs, one COUNT per such column,
// which reads the whole table where the column has no index. A column of
// that name that is not a lockplugin version column is reported too; one
// with another name is not. A failure to look is itself a finding, so that
// a check that did not run is never taken for a clean one.
func nullVersions(ctx context.Context, db *sql.DB, kind string) []finding {
	cols, err := versionColumns(ctx, db, kind)
	if err != nil {
		return []finding{{ID: "version-null-unchecked",
			Problem: fmt.Sprintf("could not list the version columns to look for NULL versions: %v", err),
			Fix:     "count them by hand: SELECT COUNT(*) FROM t WHERE version IS NULL, for each versioned table t"}}
	}
	var fs []finding
	for _, c := range cols {
		table := quoteIdent(kind, c.schema, c.table)
		col := quoteIdent(kind, "", c.column)
		var n int64
		// The names come from the database's catalog and are quoted.
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE "+col+" IS NULL").Scan(&n); err != nil {
			fs = append(fs, finding{ID: "version-null-unchecked",
				Problem: fmt.Sprintf("could not count the NULL versions of %s.%s: %v", table, c.column, err),
				Fix:     fmt.Sprintf("count them by hand: SELECT COUNT(*) FROM %s WHERE %s IS NULL", table, col)})
			continue
		}
		if n == 0 {
			continue
		}
		fs = append(fs, finding{ID: "version-null",
			Problem: fmt.Sprintf("%d row(s) of %s have a NULL %s: rows older than the version column. lockplugin guards them (a NULL is read as NullVersion), "+
				"but StrictVersion refuses a write of one that was not read first, and AutoMigrate cannot make the column NOT NULL DEFAULT 1 while they remain "+
				"(doctor takes every nullable integer column named version or lock_version for a lockplugin version column; ignore this if %s is not one)",
				n, table, c.column, c.column),
			Fix: fmt.Sprintf("backfill once: UPDATE %s SET %s = 1 WHERE %s IS NULL; then AutoMigrate makes the column NOT NULL DEFAULT 1", table, col, col)})
	}
	return fs
}

// versionColumns lists the candidate columns of the current database.
func versionColumns(ctx context.Context, db *sql.DB, kind string) ([]versionColumn, error) {
	in := "'" + strings.Join(versionColumnNames, "', '") + "'"
	var q string
	switch kind {
	case "postgres":
		q = `SELECT c.table_schema, c.table_name, c.column_name FROM information_schema.columns c
			JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
			WHERE t.table_type = 'BASE TABLE' AND c.table_schema = ANY (current_schemas(false))
			AND c.column_name IN (` + in + `) AND c.is_nullable = 'YES'
			AND c.data_type IN ('bigint', 'integer', 'smallint', 'numeric')
			ORDER BY 1, 2`
	case "mysql":
		q = `SELECT c.table_schema, c.table_name, c.column_name FROM information_schema.columns c
			JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
			WHERE t.table_type = 'BASE TABLE' AND c.table_schema = DATABASE()
			AND c.column_name IN (` + in + `) AND c.is_nullable = 'YES'
			AND c.data_type IN ('bigint', 'int', 'integer', 'mediumint', 'smallint', 'tinyint', 'decimal')
			ORDER BY 1, 2`
	case "sqlserver":
		q = `SELECT c.table_schema, c.table_name, c.column_name FROM information_schema.columns c
			JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
			WHERE t.table_type = 'BASE TABLE' AND t.table_catalog = DB_NAME()
			AND c.column_name IN (` + in + `) AND c.is_nullable = 'YES'
			AND c.data_type IN ('bigint', 'int', 'smallint', 'tinyint', 'decimal', 'numeric')
			ORDER BY 1, 2`
	case "sqlite":
		q = `SELECT '', m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p
			WHERE m.type = 'table' AND p.name IN (` + in + `) AND p."notnull" = 0
			AND upper(p.type) LIKE '%INT%'
			ORDER BY 2`
	default:
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []versionColumn
	for rows.Next() {
		var c versionColumn
		if err := rows.Scan(&c.schema, &c.table, &c.column); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// quoteIdent quotes a (schema-qualified) identifier for kind, doubling the
// quote character inside it.
func quoteIdent(kind, schema, name string) string {
	q := func(s string) string {
		switch kind {
		case "mysql":
			return "`" + strings.ReplaceAll(s, "`", "``") + "`"
		case "sqlserver":
			return "[" + strings.ReplaceAll(s, "]", "]]") + "]"
		}
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	if schema == "" || kind == "sqlite" || kind == "mysql" {
		return q(name)
	}
	return q(schema) + "." + q(name)
}
