package lockplugin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/clauses"
	"github.com/lockplugin/lockplugin/internal/ctxjoin"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// ErrInvalidClaim is returned by Claim for arguments no database could run:
// n below 1, nothing to set, a column T does not have, a model without a
// single-column primary key. Nothing was sent.
var ErrInvalidClaim = errors.New("lockplugin: invalid claim")

// Claim claims up to n rows of T's table (or of the one db.Table names)
// that match where, sets the
// columns in set on them, and returns them as they are after the update:
// the work-queue claim. Each row goes to exactly one caller, however many
// claim at once; rows other callers are claiming are passed over, not
// waited for, and a claim that finds nothing returns no rows and no error.
//
//	jobs, err := lockplugin.Claim[Job](ctx, db, 10,
//		clause.Eq{Column: clause.Column{Name: "state"}, Value: "queued"},
//		map[string]any{"state": "running", "worker": me, "attempts": gorm.Expr("attempts + 1")})
//
// where is any GORM condition (clause.Eq, clause.And, gorm.Expr("run_at <=
// ?", now), ...), or nil for every row; its values are bound, never
// spliced. set maps columns (database names or T's field names) to values
// or expressions (gorm.Expr); set must change the rows so that where no
// longer matches them, or the next claim takes them again. Claim sets
// exactly those columns: GORM hooks and UpdatedAt are not run.
// Soft-deleted rows (gorm.DeletedAt) are not claimed unless db is
// Unscoped. Rows are taken in primary key order where the database lets a
// claim choose, and come back in no particular order.
//
// Each database gets the fewest round trips it allows:
//   - PostgreSQL: one statement, UPDATE ... FROM (SELECT key ... ORDER BY
//     key LIMIT n FOR UPDATE SKIP LOCKED) ... RETURNING.
//   - SQLite (3.35 or later): one statement, UPDATE ... WHERE key IN
//     (SELECT key ... LIMIT n) RETURNING; SQLite runs one writer at a time.
//   - SQL Server: one statement, UPDATE TOP (n) ... WITH (UPDLOCK,
//     READPAST, ROWLOCK) ... OUTPUT INSERTED.* (the table must have no
//     enabled triggers, which OUTPUT without INTO refuses; TOP picks rows in
//     no particular order).
//   - MySQL 8.0.1+, MariaDB 10.6+ and Oracle: SELECT ... FOR UPDATE SKIP
//     LOCKED, then UPDATE, in one transaction (Oracle reads n rows of an
//     unlimited, unordered cursor: it cannot lock a row-limited query).
//     The rows returned are those read under the lock with set's values
//     applied; with an expression in set they are read again.
//
// Elsewhere (MySQL before 8.0.1, MariaDB before 10.6, TiDB, a database
// lockplugin does not know) Claim fails with ErrUnsupported before any
// SQL is sent. T is a model struct or a pointer to one (Claim[*Job]);
// other element types are ErrInvalidClaim, before any SQL.
//
// A claim is sent once. Outside a transaction it runs on a connection of
// its own (a *sql.Conn, or the MySQL-family transaction), never through
// the pool, which re-sends a statement on another connection when a
// driver reports driver.ErrBadConn, as some do after the server ran it: a
// re-sent claim takes a second batch and the first is lost. When the
// claim was sent and no answer came back (a lost reply, a killed server
// or connection, ctx ending mid-statement, a failed COMMIT), Claim returns
// an error matching ErrClaimOutcomeUnknown: its rows may be claimed and
// handed to no one. Reclaim re-queues those, and the rows of workers that
// died, once their claim is older than a visibility timeout: stamp a
// claimed-at column in set (see Reclaim). Errors from before the send
// (no connection, a failed BEGIN) and the database's own refusal of the
// statement mean nothing was claimed and are returned as they are.
//
// On MySQL and MariaDB the claim transaction runs at READ COMMITTED,
// whatever the session's default: at InnoDB's REPEATABLE READ concurrent
// claimers deadlock on the gap locks of the (state, id) index (error
// 1213). A deadlock or lock wait timeout that still ends a try before its
// COMMIT is retried (up to 5 tries); it never reaches the caller unless
// every try failed.
//
// Claim needs an index that serves where and the key order, or each claim
// reads the table from its first row: on a drained queue that is every
// finished job, and InnoDB locks each row it reads. Index the state column
// and the key, e.g. CREATE INDEX ... ON jobs (state, id) (ClaimIndexAdvice
// prints it). With an Observer (WithObserver), Claim checks each table's
// indexes once per pool and reports a where no index leads with as an
// observe.Warning; lockcheck doctor reports such tables too.
//
// On a db inside a transaction Claim runs in it (at that transaction's
// isolation: use READ COMMITTED on MySQL), and the rows stay claimed only
// if it commits; its COMMIT's outcome is the caller's to learn. The plugin
// must be registered on db (ErrNotRegistered); ctx and db's own context
// both bound the call.
func Claim[T any](ctx context.Context, db *gorm.DB, n int, where clause.Expression, set map[string]any) ([]T, error) {
	if db == nil || !plugin.Registered(db) {
		return nil, ErrNotRegistered
	}
	ctx, cancel := ctxjoin.Join(ctx, db)
	defer cancel()
	table, err := claimTable(db)
	if err != nil {
		return nil, err
	}
	if err := claimableStatement(db.Statement); err != nil {
		return nil, err
	}
	// A session that keeps db's statement: its Table, Unscoped and
	// Settings (dbresolver.Use, say) apply to every statement Claim sends.
	base := db.Session(&gorm.Session{Context: ctx})
	c, err := newClaim[T](base, table, n, where, set)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.checkIndex(base)
	inTx := plugin.InTransaction(base.Statement.ConnPool)
	if !c.cl.OneStatement() {
		if inTx {
			return claimLocked[T](base, c)
		}
		return claimInTx[T](ctx, base, c)
	}
	if inTx {
		// The caller's transaction is pinned to its connection, and
		// whatever happens to it is the caller's COMMIT to learn.
		out, _, err := claimOne[T](ctx, base, base.Statement.ConnPool, c)
		return out, err
	}
	// A connection of its own, not the pool: database/sql retries a
	// statement on a new connection when the driver says the first
	// was bad (driver.ErrBadConn), and some drivers say so after the
	// server ran it. A retried claim takes a second batch and hands
	// back only that one.
	pool, cp := claimPool(ctx, base)
	if pool == nil {
		// A ConnPool of the caller's own making (neither a *sql.DB
		// nor a gorm.GetDBConnector): its connections are its own
		// to manage, and the statement goes through it.
		out, sent, err := claimOne[T](ctx, base, cp, c)
		if err != nil && sent {
			return nil, c.unknown(err)
		}
		return out, err
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return nil, err // no connection: nothing was sent
	}
	defer conn.Close()
	out, sent, err := claimOne[T](ctx, base, conn, c)
	if err != nil && sent {
		return nil, c.unknown(err)
	}
	return out, err
}

// ErrClaimOutcomeUnknown is wrapped by the error Claim returns when its
// claim reached the database and the answer did not come back: the
// connection broke, the server went away, or ctx ended while the statement
// (or the MySQL-family COMMIT) ran. The rows it matched may be claimed,
// with set's values on them, and handed to no one. Nothing is retried:
// a second try would claim a second batch. Such rows, like the rows of a
// worker that died, are re-queued by Reclaim once their claim is older
// than the visibility timeout (see Reclaim), so set should stamp a
// claimed-at column. errors.Is(err, ErrClaimOutcomeUnknown) tells this
// case apart; errors.Unwrap gives the driver's error. Errors known to come
// before anything was sent (no connection to be had, a refused BEGIN, a
// statement the server rejected) are returned as they are: nothing is
// claimed.
var ErrClaimOutcomeUnknown = errors.New("lockplugin: claim outcome unknown")

// claimUnknownError is an ErrClaimOutcomeUnknown with its cause.
type claimUnknownError struct {
	db, table string
	cause     error
}

func (e *claimUnknownError) Error() string {
	return fmt.Sprintf("lockplugin: Claim on %s table %s: outcome unknown, the connection failed after the claim was sent (%v); rows it claimed were returned to no one: re-queue them with lockplugin.Reclaim after the visibility timeout", e.db, e.table, e.cause)
}

func (e *claimUnknownError) Unwrap() error        { return e.cause }
func (e *claimUnknownError) Is(target error) bool { return target == ErrClaimOutcomeUnknown }

// unknown wraps err, which came after the claim was sent, as outcome
// unknown, unless the database's own answer says the claim did not run.
func (c *claim) unknown(err error) error {
	if dialects.IsStatementError(err) {
		return err
	}
	return &claimUnknownError{db: c.d.String(), table: c.tableName, cause: err}
}

// claimPool returns the *sql.DB a write through db goes to: db's own pool,
// or the source dbresolver would pick for a write; or nil and the
// ConnPool itself when that is no *sql.DB. It sends nothing.
func claimPool(ctx context.Context, db *gorm.DB) (*sql.DB, gorm.ConnPool) {
	cp := plugin.WritePool(ctx, db, db.Statement.ConnPool, "")
	switch p := cp.(type) {
	case *sql.DB:
		return p, cp
	case gorm.GetDBConnector:
		if sqlDB, err := p.GetDBConn(); err == nil && sqlDB != nil {
			return sqlDB, cp
		}
	}
	return nil, cp
}

// claimOne sends the one-statement claim of PostgreSQL, SQLite or SQL
// Server on conn and reads the rows. sent reports whether the statement
// may have reached the database.
func claimOne[T any](ctx context.Context, db *gorm.DB, conn gorm.ConnPool, c *claim) (out []T, sent bool, err error) {
	query, vars := c.statement()
	// Table lets clause.CurrentTable in where (and in the soft-delete
	// condition) name the claimed table. Raw only builds the SQL; it is
	// sent here, on conn, not through GORM's callbacks, which could
	// switch the connection (dbresolver).
	stmt := db.Table(c.tableName).Raw(query, vars...).Statement
	sqlText, args := stmt.SQL.String(), stmt.Vars
	begin := time.Now()
	defer func() {
		if db.Logger != nil {
			db.Logger.Trace(ctx, begin, func() (string, int64) {
				return db.Dialector.Explain(sqlText, args...), int64(len(out))
			}, err)
		}
	}()
	if db.DryRun {
		return nil, false, nil
	}
	rows, err := conn.QueryContext(ctx, sqlText, args...)
	if err != nil {
		return nil, true, err
	}
	if c.fastScan {
		out, err = scanClaimed[T](ctx, rows, c.sch)
	} else {
		out, err = scanWithGORM[T](db, rows)
	}
	if err != nil {
		return nil, true, err
	}
	return out, true, nil
}

// scanWithGORM reads rows into Ts with GORM's own scanning (for fields
// with a serializer).
func scanWithGORM[T any](db *gorm.DB, rows *sql.Rows) (out []T, err error) {
	defer func() { err = errors.Join(err, rows.Close()) }()
	for rows.Next() {
		v := newElem[T]()
		if err := db.ScanRows(rows, v); err != nil {
			return nil, err
		}
		out = append(out, *v)
	}
	return out, rows.Err()
}

// newElem returns a new T, with T's struct allocated when T is a pointer,
// for a scan to fill.
func newElem[T any]() *T {
	v := new(T)
	if rv := reflect.ValueOf(v).Elem(); rv.Kind() == reflect.Pointer {
		rv.Set(reflect.New(rv.Type().Elem()))
	}
	return v
}

// claimAttempts bounds the MySQL-family claim transactions Claim runs for
// one call when a deadlock or lock wait timeout ends one before its COMMIT
// (nothing was claimed then).
const claimAttempts = 5

// claimInTx runs the locking claim in a transaction of its own, at the
// isolation level the database's claim asks for (READ COMMITTED on the
// MySQL family, where REPEATABLE READ's gap locks deadlock concurrent
// claimers: see internal/drivers/mysql/claim.go). A deadlock or lock wait
// timeout that still ends a try before its COMMIT is retried here: nothing
// was committed.
func claimInTx[T any](ctx context.Context, base *gorm.DB, c *claim) ([]T, error) {
	var opts *sql.TxOptions
	if iso := c.cl.Isolation(); iso != sql.LevelDefault {
		opts = &sql.TxOptions{Isolation: iso}
	}
	for attempt := 1; ; attempt++ {
		// A transaction holds one connection: database/sql never re-sends
		// its statements elsewhere. A failed BEGIN claimed nothing.
		tx := base.Begin(opts)
		if tx.Error != nil {
			return nil, tx.Error
		}
		out, err := claimLocked[T](tx, c)
		if err != nil {
			// Not committed: the rollback (or, with the connection gone,
			// the server) undoes the claim.
			_ = tx.Rollback()
			if attempt < claimAttempts && (dialects.IsRetryable(err) || dialects.IsLockNotAvailable(err)) {
				if werr := sleepCtx(ctx, time.Duration(attempt)*time.Millisecond); werr != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}
		if err := tx.Commit().Error; err != nil {
			return nil, c.unknown(err)
		}
		return out, nil
	}
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// claim is one Claim call's validated arguments.
type claim struct {
	d         dialects.Dialect
	dr        sqldriver.Driver // d's
	cl        sqldriver.Claim  // d's claim
	sch       *schema.Schema
	tableName string
	table     string // quoted
	key       *schema.Field
	n         int
	where     clause.Expression
	userWhere clause.Expression // where as the caller wrote it
	cols      []*schema.Field   // sorted by column name, for stable SQL
	values    []any             // in cols order
	exprs     bool              // a value is an expression the database computes
	// fastScan is set when no field of T needs GORM's own scanning (a
	// serializer): scanClaimed then fills the rows.
	fastScan bool
}

// claimableStatement refuses a db that carries conditions or clauses of
// its own (db.Where(...), Joins, Select, Clauses): Claim takes its one
// condition as where, and a condition it dropped would claim rows the
// caller meant to leave alone.
func claimableStatement(stmt *gorm.Statement) error {
	if stmt == nil {
		return nil
	}
	var what []string
	for name := range stmt.Clauses {
		what = append(what, name)
	}
	if len(stmt.Joins) > 0 {
		what = append(what, "JOIN")
	}
	if len(stmt.Selects) > 0 || len(stmt.Omits) > 0 {
		what = append(what, "Select/Omit")
	}
	if len(stmt.Preloads) > 0 {
		what = append(what, "Preload")
	}
	if stmt.Distinct {
		what = append(what, "Distinct")
	}
	if len(what) == 0 {
		return nil
	}
	sort.Strings(what)
	return fmt.Errorf("%w: db carries %s of its own; pass Claim's condition as where, on a db without them", ErrInvalidClaim, strings.Join(what, ", "))
}

// claimTable returns the table db.Table named, or "" for T's own.
func claimTable(db *gorm.DB) (string, error) {
	stmt := db.Statement
	if stmt == nil || stmt.TableExpr == nil {
		return "", nil
	}
	if len(stmt.TableExpr.Vars) == 0 && stmt.Table != "" && stmt.TableExpr.SQL == stmt.Quote(stmt.Table) {
		return stmt.Table, nil
	}
	return "", fmt.Errorf("%w: db.Table(%q) is not one plain table name; Claim updates one table", ErrInvalidClaim, stmt.TableExpr.SQL)
}

func newClaim[T any](db *gorm.DB, table string, n int, where clause.Expression, set map[string]any) (*claim, error) {
	c := &claim{d: dialects.Of(db), n: n, where: where, userWhere: where}
	if err := c.d.Require(dialects.QueueClaim); err != nil {
		return nil, err
	}
	c.dr = drivers.For(c.d)
	if c.cl = c.dr.Claim(); c.cl == nil {
		// The capability matrix allowed a claim that the database's
		// driver cannot phrase: a missing driver, refused as unsupported.
		return nil, fmt.Errorf("%w: Claim on %s: no claim statements for this database", ErrUnsupported, c.d)
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: n is %d; claim at least 1 row", ErrInvalidClaim, n)
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("%w: set is empty; a claim must mark its rows (state = 'running', say) or the next claim takes them again", ErrInvalidClaim)
	}
	// T is a struct or a pointer to one; anything else (a **Job, a map)
	// is refused here, before a statement could be sent and its rows
	// then not be read back.
	if rt := reflect.TypeOf((*T)(nil)).Elem(); !(rt.Kind() == reflect.Struct || rt.Kind() == reflect.Pointer && rt.Elem().Kind() == reflect.Struct) {
		return nil, fmt.Errorf("%w: Claim[%s]: T must be a model struct or a pointer to one", ErrInvalidClaim, rt)
	}
	stmt := db.Model(new(T)).Statement
	if err := stmt.Parse(new(T)); err != nil {
		return nil, fmt.Errorf("%w: %T is not a model GORM can parse: %v", ErrInvalidClaim, *new(T), err)
	}
	c.sch = stmt.Schema
	if len(c.sch.PrimaryFields) != 1 || c.sch.PrioritizedPrimaryField == nil {
		return nil, fmt.Errorf("%w: %s has %d primary key columns; Claim needs exactly one to tell the claimed rows apart", ErrInvalidClaim, c.sch.Name, len(c.sch.PrimaryFields))
	}
	c.key = c.sch.PrioritizedPrimaryField
	c.fastScan = true
	for _, f := range c.sch.Fields {
		if f.Serializer != nil {
			c.fastScan = false
		}
	}
	c.tableName = c.sch.Table
	if table != "" {
		c.tableName = table
	}
	if !sqldriver.ValidTableName(c.tableName, 128) {
		return nil, fmt.Errorf("%w: table name %q of %s is not a plain identifier (letters, digits, _, with an optional schema)", ErrInvalidClaim, c.tableName, c.sch.Name)
	}
	c.table = c.dr.QuoteTable(c.tableName)
	if err := validColumn(c.key.DBName); err != nil {
		return nil, err
	}
	type assignment struct {
		f *schema.Field
		v any
	}
	assigns := make([]assignment, 0, len(set))
	for name, v := range set {
		f := c.sch.LookUpField(name)
		if f == nil || f.DBName == "" {
			return nil, fmt.Errorf("%w: %s has no column %q to set", ErrInvalidClaim, c.sch.Name, name)
		}
		if err := validColumn(f.DBName); err != nil {
			return nil, err
		}
		for _, a := range assigns {
			if a.f == f {
				return nil, fmt.Errorf("%w: column %q is set twice (by its field name and its column name)", ErrInvalidClaim, f.DBName)
			}
		}
		assigns = append(assigns, assignment{f, v})
	}
	sort.Slice(assigns, func(i, j int) bool { return assigns[i].f.DBName < assigns[j].f.DBName })
	for _, a := range assigns {
		switch a.v.(type) {
		case clause.Expression, *gorm.DB:
			c.exprs = true
		}
		c.cols = append(c.cols, a.f)
		c.values = append(c.values, a.v)
	}
	if w, ok := where.(clause.Where); ok {
		// As a bind value a clause.Where would write its own WHERE.
		c.where = clause.And(w.Exprs...)
	}
	if c.cl.OneStatement() {
		// The one-statement claims are Raw SQL, which GORM sends as
		// written: add the conditions GORM would add to a query of T
		// (gorm.DeletedAt's "deleted_at IS NULL") by hand.
		if conds := queryConditions(db, c.sch, c.tableName); len(conds) > 0 {
			if c.where != nil {
				conds = append([]clause.Expression{c.where}, conds...)
			}
			c.where = clause.And(conds...)
		}
	}
	return c, nil
}

// queryConditions returns the WHERE conditions that T's query clauses
// (soft delete) add to every GORM query of T, unless db is Unscoped.
func queryConditions(db *gorm.DB, sch *schema.Schema, table string) []clause.Expression {
	if len(sch.QueryClauses) == 0 {
		return nil
	}
	scratch := db.Session(&gorm.Session{DryRun: true}).Table(table)
	stmt := scratch.Statement
	stmt.Schema = sch
	for _, qc := range sch.QueryClauses {
		if m, ok := qc.(gorm.StatementModifier); ok {
			m.ModifyStatement(stmt)
		}
	}
	if w, ok := stmt.Clauses["WHERE"].Expression.(clause.Where); ok {
		return w.Exprs
	}
	return nil
}

func validColumn(name string) error {
	if !sqldriver.ValidTableName(name, 128) || strings.Contains(name, ".") {
		return fmt.Errorf("%w: column name %q is not a plain identifier (letters, digits, _)", ErrInvalidClaim, name)
	}
	return nil
}

// statement returns the one-statement claim (PostgreSQL, SQLite, SQL
// Server), with "?" for GORM to bind each value (and build each
// expression) in the database's own style.
func (c *claim) statement() (string, []any) {
	q := c.dr.QuoteIdent
	u := sqldriver.ClaimUpdate{Table: c.table, Key: q(c.key.DBName), Values: c.values, Where: c.where, N: c.n}
	u.Cols = make([]string, len(c.cols))
	for i, f := range c.cols {
		u.Cols[i] = q(f.DBName)
	}
	return c.cl.Update(u)
}

// claimLocked is the claim of the databases without a one-statement claim
// (the MySQL family, Oracle), inside tx: lock up to n matching rows no one
// else holds, then update them by key.
func claimLocked[T any](tx *gorm.DB, c *claim) ([]T, error) {
	keyCol := clause.Column{Name: c.key.DBName}
	q := tx.Table(c.tableName).Model(new(T)).Clauses(clauses.ForUpdate(clauses.SkipLocked))
	if c.where != nil {
		q = q.Where(c.where)
	}
	var out []T
	if c.cl.CursorRead() {
		// No row limit on a locking read here (Oracle's ORA-02014): read
		// n rows of the cursor, unordered (see the driver's CursorRead).
		rows, err := q.Rows()
		if err != nil {
			return nil, err
		}
		for len(out) < c.n && rows.Next() {
			var v T
			if err := tx.ScanRows(rows, &v); err != nil {
				_ = rows.Close()
				return nil, err
			}
			out = append(out, v)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	} else if err := q.Order(clause.OrderByColumn{Column: keyCol}).Limit(c.n).Find(&out).Error; err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}
	ctx := tx.Statement.Context
	keys := make([]any, len(out))
	for i := range out {
		keys[i], _ = c.key.ValueOf(ctx, reflect.ValueOf(&out[i]).Elem())
	}
	assign := make(map[string]any, len(c.cols))
	for i, f := range c.cols {
		assign[f.DBName] = c.values[i]
	}
	in := clause.IN{Column: keyCol, Values: keys}
	if err := tx.Table(c.tableName).Model(new(T)).Where(in).UpdateColumns(assign).Error; err != nil {
		return nil, err
	}
	if !c.exprs {
		ok := true
		for i := range out {
			rv := reflect.ValueOf(&out[i]).Elem()
			for j, f := range c.cols {
				if f.Set(ctx, rv, c.values[j]) != nil {
					ok = false
				}
			}
		}
		if ok {
			return out, nil
		}
	}
	// The database computed (or converted) the values: read them back,
	// under the locks the transaction still holds.
	out = out[:0]
	if err := tx.Table(c.tableName).Model(new(T)).Where(in).Order(clause.OrderByColumn{Column: keyCol}).Find(&out).Error; err != nil {
		return nil, err
	}
	return out, nil
}

// scanClaimed reads the claimed rows into Ts. It does what GORM's Scan does
// for a flat model, with less work per row: each column is read as the
// driver sends it and handed to the field's own setter, which converts it
// as GORM would (NULL to the zero value, int64 to int, a Scanner's Scan).
// A claim is a few short rows, and on a busy two-core machine the
// client's time per claim competes with the database's.
func scanClaimed[T any](ctx context.Context, rows *sql.Rows, sch *schema.Schema) (out []T, err error) {
	defer func() { err = errors.Join(err, rows.Close()) }()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	fields := make([]*schema.Field, len(cols))
	for i, name := range cols {
		if f := sch.LookUpField(name); f != nil && f.Readable {
			fields[i] = f
		}
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		vp := newElem[T]()
		rv := reflect.ValueOf(vp).Elem()
		for i, f := range fields {
			if f == nil {
				continue
			}
			if err := f.Set(ctx, rv, vals[i]); err != nil {
				return nil, fmt.Errorf("lockplugin: Claim: reading column %q into %s.%s: %w", cols[i], sch.Name, f.Name, err)
			}
		}
		out = append(out, *vp)
	}
	return out, rows.Err()
}
