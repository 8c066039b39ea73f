package main

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/dialects"
)

// The statements `lockcheck who` reads advisory locks with; exact SQL is
// tested in who_advisory_test.go.
const (
	// pgAdvisorySQL: every session advisory lock granted in the current
	// database, with its session.
	pgAdvisorySQL = `SELECT (l.classid::bigint << 32) | l.objid::bigint, l.pid, COALESCE(a.application_name, ''), COALESCE(host(a.client_addr), 'local')
FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
ORDER BY 1, 2`

	// mysqlPerfSchemaReadySQL answers 1 when performance_schema is on and
	// instruments metadata locks (user-level locks are metadata locks);
	// only then does metadata_locks list them.
	mysqlPerfSchemaReadySQL = `SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE NAME = 'wait/lock/metadata/sql/mdl' AND ENABLED = 'YES'`

	// mysqlUserLocksSQL: every GET_LOCK lock granted on the server, with
	// the connection id (CONNECTION_ID(), as IS_USED_LOCK answers) of its
	// holder.
	mysqlUserLocksSQL = `SELECT m.OBJECT_NAME, t.PROCESSLIST_ID, COALESCE(t.PROCESSLIST_USER, ''), COALESCE(t.PROCESSLIST_HOST, '')
FROM performance_schema.metadata_locks m JOIN performance_schema.threads t ON t.THREAD_ID = m.OWNER_THREAD_ID
WHERE m.OBJECT_TYPE = 'USER LEVEL LOCK' AND m.LOCK_STATUS = 'GRANTED'
ORDER BY m.OBJECT_NAME, t.PROCESSLIST_ID`

	// sqlServerAppLocksSQL: every application lock (sp_getapplock)
	// granted in the current database, with its session. Needs VIEW
	// SERVER STATE (VIEW SERVER PERFORMANCE STATE on SQL Server 2022).
	sqlServerAppLocksSQL = `SELECT l.resource_description, l.request_session_id, l.request_mode, l.request_owner_type, COALESCE(s.program_name, N''), COALESCE(s.host_name, N'')
FROM sys.dm_tran_locks l LEFT JOIN sys.dm_exec_sessions s ON s.session_id = l.request_session_id
WHERE l.resource_type = 'APPLICATION' AND l.request_status = 'GRANT' AND l.resource_database_id = DB_ID()
ORDER BY l.resource_description, l.request_session_id`
)

// Where advisory locks were read from (holding.Source).
const (
	srcPgLocks      = "pg_locks"
	srcPerfSchema   = "performance_schema.metadata_locks"
	srcIsUsedLock   = "IS_USED_LOCK"
	srcDmTranLocks  = "sys.dm_tran_locks"
	srcProcLocks    = "/proc/locks"
	srcProbe        = "probe"
	appLockNameSize = 32 // the name part of an application lock's resource_description
)

// advisoryHolders lists session advisory locks: every one in the current
// database on PostgreSQL (pg_locks; a key that matches a -name shows that
// name) and SQL Server (sys.dm_tran_locks); on MySQL/MariaDB every one on
// the server from performance_schema.metadata_locks where it is enabled,
// and otherwise the -name locks IS_USED_LOCK says are held (GET_LOCK locks
// cannot be listed without performance_schema).
// source says which of these was read.
func advisoryHolders(ctx context.Context, db *sql.DB, d dialects.Dialect, names []string) (rows []holding, source string, err error) {
	switch {
	case d.Kind == dialects.Postgres:
		rows, err = pgAdvisory(ctx, db, names)
		return rows, srcPgLocks, err
	case d.IsMySQLFamily():
		if perfSchemaReady(ctx, db) {
			rows, err = mysqlUserLocks(ctx, db)
			return rows, srcPerfSchema, err
		}
		rows, err = mysqlIsUsedLock(ctx, db, names)
		return rows, srcIsUsedLock + " (performance_schema off or not instrumenting metadata locks: only -name locks)", err
	case d.Kind == dialects.SQLServer:
		rows, err = sqlServerAppLocks(ctx, db, names)
		return rows, srcDmTranLocks, err
	}
	return nil, "", nil
}

func pgAdvisory(ctx context.Context, db *sql.DB, names []string) ([]holding, error) {
	byKey := map[int64]string{}
	for _, n := range names {
		byKey[advisory.PostgresKey(n)] = n
	}
	rows, err := db.QueryContext(ctx, pgAdvisorySQL)
	if err != nil {
		return nil, fmt.Errorf("reading pg_locks: %w", err)
	}
	defer rows.Close()
	var out []holding
	for rows.Next() {
		var key, pid int64
		var app, addr string
		if err := rows.Scan(&key, &pid, &app, &addr); err != nil {
			return nil, err
		}
		name, ok := byKey[key]
		if !ok {
			name = "key:" + strconv.FormatInt(key, 10)
		}
		out = append(out, holding{Mechanism: "advisory", Name: name, Holder: fmt.Sprintf("pid %d (%s %s)", pid, app, addr), Source: srcPgLocks})
	}
	return out, rows.Err()
}

// perfSchemaReady reports whether performance_schema lists user-level
// locks; any error (performance_schema off, no privilege) means no.
func perfSchemaReady(ctx context.Context, db *sql.DB) bool {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT @@performance_schema").Scan(&n); err != nil || n != 1 {
		return false
	}
	if err := db.QueryRowContext(ctx, mysqlPerfSchemaReadySQL).Scan(&n); err != nil {
		return false
	}
	return n == 1
}

func mysqlUserLocks(ctx context.Context, db *sql.DB) ([]holding, error) {
	rows, err := db.QueryContext(ctx, mysqlUserLocksSQL)
	if err != nil {
		return nil, fmt.Errorf("reading performance_schema.metadata_locks: %w", err)
	}
	defer rows.Close()
	var out []holding
	for rows.Next() {
		var name, user, host string
		var id sql.NullInt64
		if err := rows.Scan(&name, &id, &user, &host); err != nil {
			return nil, err
		}
		out = append(out, holding{Mechanism: "advisory", Name: name, Holder: fmt.Sprintf("connection %d (%s@%s)", id.Int64, user, host), Source: srcPerfSchema})
	}
	return out, rows.Err()
}

func mysqlIsUsedLock(ctx context.Context, db *sql.DB, names []string) ([]holding, error) {
	var out []holding
	for _, n := range names {
		var id sql.NullInt64
		if err := db.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", n).Scan(&id); err != nil {
			return nil, fmt.Errorf("IS_USED_LOCK: %w", err)
		}
		if id.Valid {
			out = append(out, holding{Mechanism: "advisory", Name: n, Holder: fmt.Sprintf("connection %d", id.Int64), Source: srcIsUsedLock})
		}
	}
	return out, nil
}

func sqlServerAppLocks(ctx context.Context, db *sql.DB, names []string) ([]holding, error) {
	rows, err := db.QueryContext(ctx, sqlServerAppLocksSQL)
	if err != nil {
		return nil, fmt.Errorf("reading sys.dm_tran_locks (needs VIEW SERVER STATE, or VIEW SERVER PERFORMANCE STATE on SQL Server 2022): %w", err)
	}
	defer rows.Close()
	var out []holding
	for rows.Next() {
		var desc, mode, owner, program, host string
		var session int64
		if err := rows.Scan(&desc, &session, &mode, &owner, &program, &host); err != nil {
			return nil, err
		}
		out = append(out, holding{Mechanism: "advisory", Name: appLockName(desc, names),
			Holder: fmt.Sprintf("session %d (%s %s, %s %s)", session, program, host, strings.ToLower(owner), mode), Source: srcDmTranLocks})
	}
	return out, rows.Err()
}

// appLockName reads the lock name from an application lock's
// resource_description, "<principal>:[<name>]:(<hash>)", where SQL Server
// keeps only the first 32 characters of the name: a -name whose first 32
// characters match is shown whole; a longer name that was cut is shown
// with "..." after what is left.
func appLockName(desc string, names []string) string {
	start := strings.IndexByte(desc, '[')
	end := strings.LastIndex(desc, "]:")
	if start < 0 || end <= start {
		return desc
	}
	shown := desc[start+1 : end]
	for _, n := range names {
		if n == shown || (len(n) > appLockNameSize && strings.HasPrefix(n, shown) && len([]rune(shown)) >= appLockNameSize) {
			return n
		}
	}
	if len([]rune(shown)) >= appLockNameSize {
		return shown + "..."
	}
	return shown
}
