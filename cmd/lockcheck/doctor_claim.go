package main

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
)

// doctorClaim reports queue tables a claim cannot find its rows in without
// scanning: tables with a claimed_at column (the visibility-timeout stamp
// the README's Claim section advises) and a state or status column, on
// which no index leads with that column. Without one, each
// lockplugin.Claim reads the table from its first row: on a drained queue
// every finished job, and InnoDB locks each row it reads. A catalog it
// cannot read is no finding.
func doctorClaim(ctx context.Context, db *sql.DB, kind string) []finding {
	var colsQ, idxQ string
	switch kind {
	case "postgres":
		colsQ = "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name IN ('claimed_at', 'state', 'status')"
		idxQ = "SELECT c.relname, a.attname FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] WHERE c.relnamespace = to_regnamespace(current_schema())"
	case "mysql":
		colsQ = "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND column_name IN ('claimed_at', 'state', 'status')"
		idxQ = "SELECT table_name, column_name FROM information_schema.statistics WHERE table_schema = DATABASE() AND seq_in_index = 1"
	case "sqlite":
		colsQ = "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' AND p.name IN ('claimed_at', 'state', 'status')"
		idxQ = "SELECT m.name, ii.name FROM sqlite_master m, pragma_index_list(m.name) il, pragma_index_info(il.name) ii WHERE m.type = 'table' AND ii.seqno = 0"
	default:
		return nil
	}
	cols, err := pairs(ctx, db, colsQ)
	if err != nil {
		return nil
	}
	leading, err := pairs(ctx, db, idxQ)
	if err != nil {
		return nil
	}
	var fs []finding
	tables := make([]string, 0, len(cols))
	for t := range cols {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, t := range tables {
		c := cols[t]
		if !c["claimed_at"] {
			continue
		}
		state := "state"
		if !c[state] {
			state = "status"
		}
		if !c[state] || leading[t][state] {
			continue
		}
		fs = append(fs, finding{ID: "claim-index",
			Problem: fmt.Sprintf("queue table %s (it has claimed_at and %s) has no index that starts with %s: each lockplugin.Claim reads the table from its first row, on a drained queue every finished job (on InnoDB, locking each row it reads)", t, state, state),
			Fix:     fmt.Sprintf("CREATE INDEX %s_claim ON %s (%s, <primary key>); on PostgreSQL a partial index ON %s (<primary key>) WHERE %s = '<claimable state>' serves too", t, t, state, t, state)})
	}
	return fs
}

// pairs reads (table, column) rows into table -> lower-case column -> true.
func pairs(ctx context.Context, db *sql.DB, q string) (map[string]map[string]bool, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]map[string]bool{}
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			return nil, err
		}
		if out[t] == nil {
			out[t] = map[string]bool{}
		}
		out[t][strings.ToLower(c)] = true
	}
	return out, rows.Err()
}
