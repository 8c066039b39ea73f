package sqlstore

import (
	"database/sql"
	"fmt"
	"strings"

	"github.com/lockplugin/lockplugin/dialects"
)

// The table has one row per lock name ever taken, kept after release so
// that the fencing counter survives:
//
//	lock_name   the name, or "sha256:<hex>" of it (see key)
//	owner       the owner token of the last holder
//	expires_at  epoch milliseconds by the database's clock; 0 never
//	            expires; -1 released
//	fence       the fencing counter, bumped on every acquisition
//
// A lease is held when expires_at is 0 or in the future. Released (-1)
// and expired leases are taken over by the same condition:
// expires_at <> 0 AND expires_at <= now.

// Statement templates. {t} is the quoted table, {now} the database clock
// in epoch ms, {exp} the new expiry for TTL {ttl} ms (0 stays 0), and
// {name}, {owner}, {ttl} and {fence} (an OUT parameter) are bind
// parameters.
//
// Every acquire follows one rule, on every database: it takes the row when
// the lease is over (released or expired) or is already the caller's (a
// retried acquire whose first reply was lost). The fence is bumped unless
// the lease is the caller's and unexpired: that gets its own fence back and
// a new expiry. Any other row is left alone, and where the database allows
// it the refusal writes nothing: no row lock, no transaction id, no log
// flush, so that waiters polling a held name do not slow its holder.
const (
	expiresTmpl = `CASE WHEN {ttl} = 0 THEN 0 ELSE {now} + {ttl} END`
	heldTmpl    = `lock_name = {name} AND owner = {owner} AND (expires_at = 0 OR expires_at > {now})`

	// PostgreSQL: an UPDATE that only matches a row the caller may take,
	// and an INSERT ... ON CONFLICT DO NOTHING for a name without a row,
	// in one statement. A refusal matches nothing in the UPDATE, and the
	// INSERT does not even try when the statement sees the row: read only,
	// without waiting for the holder's transaction in a conflict check.
	// (An upsert's ON CONFLICT DO UPDATE ... WHERE would lock the row
	// first, which takes a transaction id and waits for a WAL flush at
	// commit.) A row inserted by a concurrent statement is not seen; then
	// the INSERT's conflict refuses.
	pgAcquire = `WITH u AS (UPDATE {t} AS l SET owner = {owner}, expires_at = {exp}, ` +
		`fence = CASE WHEN l.owner = {owner} AND (l.expires_at = 0 OR l.expires_at > {now}) THEN l.fence ELSE l.fence + 1 END ` +
		`WHERE l.lock_name = {name} AND (l.owner = {owner} OR (l.expires_at <> 0 AND l.expires_at <= {now})) RETURNING l.fence), ` +
		`i AS (INSERT INTO {t} (lock_name, owner, expires_at, fence) SELECT {name}, {owner}, {exp}, 1 ` +
		`WHERE NOT EXISTS (SELECT 1 FROM u) AND NOT EXISTS (SELECT 1 FROM {t} WHERE lock_name = {name}) ` +
		`ON CONFLICT (lock_name) DO NOTHING RETURNING fence) ` +
		`SELECT fence FROM u UNION ALL SELECT fence FROM i`

	// SQLite has no data-modifying WITH; it serialises writers anyway, so
	// one upsert whose update only happens on a row the caller may take;
	// RETURNING yields no row when it is refused. A refusal changes no page.
	sqliteAcquire = `INSERT INTO {t} AS l (lock_name, owner, expires_at, fence) VALUES ({name}, {owner}, {exp}, 1) ` +
		`ON CONFLICT (lock_name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, ` +
		`fence = CASE WHEN l.owner = excluded.owner AND (l.expires_at = 0 OR l.expires_at > {now}) THEN l.fence ELSE l.fence + 1 END ` +
		`WHERE l.owner = excluded.owner OR (l.expires_at <> 0 AND l.expires_at <= {now}) RETURNING fence`

	// MySQL and MariaDB have no RETURNING. One INSERT ... ON DUPLICATE KEY
	// UPDATE per attempt, granted or refused, and the fence comes back in
	// the OK packet's insert id, which the last LAST_INSERT_ID(expr) the
	// statement evaluated sets (the table has no AUTO_INCREMENT): 1 from
	// VALUES for a new name; for an existing row the update always
	// evaluates one more, the new fence when the caller may take the row
	// (mysqlTakeable), else 0 (fence + LAST_INSERT_ID(0) leaves the fence
	// as it was). That leaves RowsAffected, which depends on
	// CLIENT_FOUND_ROWS, out of it. The assignments are right whether the
	// server assigns left to right, later ones seeing the new values
	// (MySQL, MariaDB's default), or all from the old row (MariaDB's
	// SIMULTANEOUS_ASSIGNMENT): fence, first, reads the old owner and
	// expiry; owner then only changes when the row is taken; and
	// expires_at's test, reading the owner, holds after a take (the owner
	// is now the caller) exactly as before it. A refusal changes no value,
	// but like any upsert it locks the row for the statement.
	mysqlAcquire = `INSERT INTO {t} (lock_name, owner, expires_at, fence) VALUES ({name}, {owner}, {exp}, LAST_INSERT_ID(1)) ` +
		`ON DUPLICATE KEY UPDATE ` +
		`fence = IF(` + mysqlTakeable + `, LAST_INSERT_ID(IF(owner = {owner} AND (expires_at = 0 OR expires_at > {now}), fence, fence + 1)), fence + LAST_INSERT_ID(0)), ` +
		`owner = IF(` + mysqlTakeable + `, {owner}, owner), ` +
		`expires_at = IF(` + mysqlTakeable + `, {exp}, expires_at)`
	// mysqlTakeable: the caller may take the row (it is the caller's, or
	// released or expired).
	mysqlTakeable = `owner = {owner} OR (expires_at <> 0 AND expires_at <= {now})`
	// fence = LAST_INSERT_ID(fence) makes a matched row report a non-zero
	// insert id even when the update changes nothing (a TTL-0 refresh of a
	// TTL-0 lease), which RowsAffected would report as 0.
	mysqlRelease = `UPDATE {t} SET expires_at = -1, fence = LAST_INSERT_ID(fence) WHERE ` + heldTmpl
	mysqlRefresh = `UPDATE {t} SET expires_at = {exp}, fence = LAST_INSERT_ID(fence) WHERE ` + heldTmpl

	// SQL Server: MERGE under HOLDLOCK, so that two sessions inserting the
	// same new name serialise instead of one failing on the primary key.
	// Its SET reads the row as it was before the update.
	mssqlAcquire = `MERGE INTO {t} WITH (HOLDLOCK) AS l USING (SELECT {name} AS lock_name) AS s ON l.lock_name = s.lock_name ` +
		`WHEN MATCHED AND (l.owner = {owner} OR (l.expires_at <> 0 AND l.expires_at <= {now})) THEN UPDATE SET owner = {owner}, expires_at = {exp}, ` +
		`fence = CASE WHEN l.owner = {owner} AND (l.expires_at = 0 OR l.expires_at > {now}) THEN l.fence ELSE l.fence + 1 END ` +
		`WHEN NOT MATCHED THEN INSERT (lock_name, owner, expires_at, fence) VALUES ({name}, {owner}, {exp}, 1) ` +
		`OUTPUT inserted.fence;`

	// Oracle: MERGE has no RETURNING, so one PL/SQL block merges and reads
	// the fence into an OUT parameter (0 when refused). A concurrent insert
	// of the same new name raises DUP_VAL_ON_INDEX: then the other session
	// holds it.
	oracleAcquire = `DECLARE f NUMBER(19) := 0; BEGIN BEGIN ` +
		`MERGE INTO {t} l USING (SELECT {name} AS lock_name FROM dual) s ON (l.lock_name = s.lock_name) ` +
		`WHEN MATCHED THEN UPDATE SET l.owner = {owner}, l.expires_at = {exp}, ` +
		`l.fence = CASE WHEN l.owner = {owner} AND (l.expires_at = 0 OR l.expires_at > {now}) THEN l.fence ELSE l.fence + 1 END ` +
		`WHERE l.owner = {owner} OR (l.expires_at <> 0 AND l.expires_at <= {now}) ` +
		`WHEN NOT MATCHED THEN INSERT (lock_name, owner, expires_at, fence) VALUES ({name}, {owner}, {exp}, 1); ` +
		`IF SQL%ROWCOUNT = 1 THEN SELECT fence INTO f FROM {t} WHERE lock_name = {name}; END IF; ` +
		`EXCEPTION WHEN DUP_VAL_ON_INDEX THEN f := 0; END; {fence} := f; END;`

	plainRelease = `UPDATE {t} SET expires_at = -1 WHERE ` + heldTmpl
	plainRefresh = `UPDATE {t} SET expires_at = {exp} WHERE ` + heldTmpl
)

// arg names what a bind parameter carries.
type arg int

const (
	argName arg = iota
	argOwner
	argTTL
	argFence // OUT parameter receiving the fence (Oracle)
)

// stmt is one rendered statement and what its parameters carry, in order.
type stmt struct {
	SQL  string
	args []arg
}

// values are the parameters of one call.
type values struct {
	name, owner string
	ttl         int64
	fence       *int64
}

// bind returns the statement's arguments for v. Each value is boxed
// once, however often the statement binds it (MySQL's acquire binds the
// owner five times).
func (s stmt) bind(v values) []any {
	out := make([]any, len(s.args))
	var name, owner, ttl any
	for i, a := range s.args {
		switch a {
		case argName:
			if name == nil {
				name = v.name
			}
			out[i] = name
		case argOwner:
			if owner == nil {
				owner = v.owner
			}
			out[i] = owner
		case argTTL:
			if ttl == nil {
				ttl = v.ttl
			}
			out[i] = ttl
		case argFence:
			out[i] = sql.Out{Dest: v.fence}
		}
	}
	return out
}

// statements are a store's statements. tidb, set on TiDB only, are the
// statements of its transactions (see tidb.go).
type statements struct {
	acquire, release, refresh stmt
	tidb                      *tidbStatements
}

// render renders the statements for a database and a quoted table.
func render(d dialects.Dialect, table string) (statements, error) {
	var acq, rel, ref string
	switch d.Kind {
	case dialects.Postgres:
		acq, rel, ref = pgAcquire, plainRelease, plainRefresh
	case dialects.SQLite:
		acq, rel, ref = sqliteAcquire, plainRelease, plainRefresh
	case dialects.MySQL, dialects.MariaDB:
		acq, rel, ref = mysqlAcquire, mysqlRelease, mysqlRefresh
	case dialects.SQLServer:
		acq, rel, ref = mssqlAcquire, plainRelease, plainRefresh
	case dialects.Oracle:
		acq, rel, ref = oracleAcquire, plainRelease, plainRefresh
	default:
		return statements{}, d.Require(dialects.LeaseTable)
	}
	st := statements{
		acquire: renderOne(d, table, acq),
		release: renderOne(d, table, rel),
		refresh: renderOne(d, table, ref),
	}
	if d.Engine == dialects.TiDB {
		st.release = renderOne(d, table, plainRelease)
		st.refresh = renderOne(d, table, plainRefresh)
		st.tidb = &tidbStatements{
			read: renderOne(d, table, tidbRead), take: renderOne(d, table, tidbTake),
			renew: renderOne(d, table, tidbRenew), insert: renderOne(d, table, tidbInsert),
			fence: renderOne(d, table, tidbFence), held: renderOne(d, table, tidbHeld),
		}
	}
	return st, nil
}

// renderOne expands a template, with each database's placeholders
// (dialects.BindVar): where numbered placeholders can be reused for the
// same value (dialects.ReusesBindVars) they are, and elsewhere each
// occurrence is bound.
func renderOne(d dialects.Dialect, table, tmpl string) stmt {
	tmpl = strings.ReplaceAll(tmpl, "{exp}", expiresTmpl)
	var b strings.Builder
	var st stmt
	numbered := map[arg]int{}
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			break
		}
		j := strings.IndexByte(tmpl[i:], '}') + i
		b.WriteString(tmpl[:i])
		tok := tmpl[i+1 : j]
		tmpl = tmpl[j+1:]
		var a arg
		switch tok {
		case "t":
			b.WriteString(table)
			continue
		case "now":
			b.WriteString(d.NowMillisSQL())
			continue
		case "name":
			a = argName
		case "owner":
			a = argOwner
		case "ttl":
			a = argTTL
		case "fence":
			a = argFence
		default:
			panic("sqlstore: unknown template token " + tok)
		}
		n, ok := numbered[a]
		if !ok || !d.ReusesBindVars() {
			st.args = append(st.args, a)
			n = len(st.args)
			numbered[a] = n
		}
		if a == argTTL {
			b.WriteString(d.BigintBindVar(n))
		} else {
			b.WriteString(d.BindVar(n))
		}
	}
	st.SQL = b.String()
	return st
}

// DefaultTable is the table name unless Table says otherwise.
const DefaultTable = "lock_leases"

// quoteTable validates a table name (an identifier, optionally qualified
// by a schema: "leases" or "app.leases") and quotes it for d.
func quoteTable(d dialects.Dialect, name string) (string, error) {
	if strings.Count(name, ".") > 1 {
		return "", fmt.Errorf("sqlstore: table name %q: at most one schema qualifier", name)
	}
	if !dialects.ValidTableName(name, 63) {
		return "", fmt.Errorf("sqlstore: table name %q is not an identifier (letters, digits and _, not starting with a digit, at most 63)", name)
	}
	return d.QuoteTable(name), nil
}

// CreateTableSQL returns the DDL that creates the lease table on the
// database a dialector name stands for ("postgres", "mysql", "sqlite",
// "sqlserver", "oracle"), for users whose database user cannot create
// tables and who therefore pass CreateTable(false) to New. Table sets the
// table name. The statement does nothing when the table exists: CREATE
// TABLE IF NOT EXISTS where the database has it, and a guard on SQL Server
// and Oracle.
func CreateTableSQL(dialect string, opts ...Option) (string, error) {
	cfg, err := buildConfig(opts)
	if err != nil {
		return "", err
	}
	d := dialects.New(dialect, "")
	table, err := quoteTable(d, cfg.table)
	if err != nil {
		return "", err
	}
	return createTableSQL(d, table)
}

func createTableSQL(d dialects.Dialect, table string) (string, error) {
	switch d.Kind {
	case dialects.Postgres:
		return `CREATE TABLE IF NOT EXISTS ` + table + ` (lock_name VARCHAR(191) NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL)`, nil
	case dialects.SQLite:
		return `CREATE TABLE IF NOT EXISTS ` + table + ` (lock_name VARCHAR(191) NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL) WITHOUT ROWID`, nil
	case dialects.MySQL, dialects.MariaDB:
		return `CREATE TABLE IF NOT EXISTS ` + table + ` (lock_name VARCHAR(191) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY, owner VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL) ENGINE=InnoDB`, nil
	case dialects.SQLServer:
		return `IF OBJECT_ID(N'` + table + `', N'U') IS NULL CREATE TABLE ` + table + ` (lock_name NVARCHAR(191) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY, owner NVARCHAR(64) COLLATE Latin1_General_100_BIN2 NOT NULL, expires_at BIGINT NOT NULL, fence BIGINT NOT NULL);`, nil
	case dialects.Oracle:
		return `BEGIN EXECUTE IMMEDIATE 'CREATE TABLE ` + table + ` (lock_name VARCHAR2(191) NOT NULL PRIMARY KEY, owner VARCHAR2(64) NOT NULL, expires_at NUMBER(19) NOT NULL, fence NUMBER(19) NOT NULL)'; ` +
			`EXCEPTION WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF; END;`, nil
	}
	return "", d.Require(dialects.LeaseTable)
}
