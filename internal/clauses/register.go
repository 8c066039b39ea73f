package clauses

import (
	"database/sql"
	"errors"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/plugin"
)

// Config configures Register.
type Config struct {
	// AllowOutsideTransaction turns off the ErrNotInTransaction check.
	AllowOutsideTransaction bool
	// SQLiteWriterLock makes FOR UPDATE and FOR SHARE on SQLite take the
	// database's writer lock before the read, instead of being refused
	// (lockplugin's SQLiteWriterLock option).
	SQLiteWriterLock bool
}

// Callback names, for applications that order their own callbacks
// around lockplugin's.
const (
	// CallbackCheck validates a statement's lock before its SQL is built
	// (registered before gorm:query, gorm:row and gorm:raw).
	CallbackCheck = "lockplugin:lock_check"
	// CallbackErrors turns a database's lock-not-available error into
	// dialects.ErrLockNotAvailable (after gorm:query and gorm:row).
	CallbackErrors = "lockplugin:lock_errors"
	// CallbackWaitRestore puts back the lock timeout that WaitAtMost
	// changed on PostgreSQL and SQL Server (after gorm:query, before
	// gorm:preload).
	CallbackWaitRestore = "lockplugin:lock_wait_restore"
)

// Register installs the lock clause callbacks and builders on db. The root
// lockplugin plugin calls it; applications use lockplugin.New.
//
// It wraps db.ClauseBuilders["FOR"] (and ["FROM"], for SQL Server's table
// hints) so that lockplugin's builders win over the dialector's, while
// clauses it does not own still reach the dialector's builders.
func Register(db *gorm.DB, cfg Config) error {
	if db == nil || db.Config == nil || db.Dialector == nil {
		return errors.New("lockplugin: clauses.Register needs a *gorm.DB opened with a dialector")
	}
	r := &registration{cfg: cfg, target: newTarget(dialects.Of(db), cfg)}
	if db.ClauseBuilders == nil {
		db.ClauseBuilders = map[string]clause.ClauseBuilder{}
	}
	db.ClauseBuilders[clauseName] = r.forBuilder(db.ClauseBuilders[clauseName])
	if r.target.hints {
		// Only SQL Server puts locks in FROM, as table hints.
		db.ClauseBuilders["FROM"] = r.fromBuilder(db.ClauseBuilders["FROM"])
	}

	cb := db.Callback()
	steps := []struct {
		what string
		err  error
	}{
		{"query check", cb.Query().Before("gorm:query").Register(CallbackCheck, r.beforeQuery)},
		{"query errors", cb.Query().After("gorm:query").Register(CallbackErrors, r.afterQuery)},
		{"query wait restore", cb.Query().After("gorm:query").Before("gorm:preload").Register(CallbackWaitRestore, restoreWait)},
		{"row check", cb.Row().Before("gorm:row").Register(CallbackCheck, r.beforeRow)},
		{"row errors", cb.Row().After("gorm:row").Register(CallbackErrors, r.afterRow)},
		{"raw check", cb.Raw().Before("gorm:raw").Register(CallbackCheck, r.beforeRaw)},
		{"raw errors", cb.Raw().After("gorm:raw").Register(CallbackErrors, subqueryErrors)},
		{"update errors", cb.Update().After("gorm:update").Register(CallbackErrors, subqueryErrors)},
		{"delete errors", cb.Delete().After("gorm:delete").Register(CallbackErrors, subqueryErrors)},
	}
	for _, s := range steps {
		if s.err != nil {
			return fmt.Errorf("lockplugin: registering the %s callback: %w", s.what, s.err)
		}
	}
	return nil
}

type registration struct {
	cfg    Config
	target *target
}

func (r *registration) forBuilder(prev clause.ClauseBuilder) clause.ClauseBuilder {
	return func(c clause.Clause, b clause.Builder) {
		if l, _, ok := lockFromClause(c); ok {
			renderFor(r.target, b, l)
			return
		}
		if prev != nil {
			prev(c, b)
			return
		}
		c.Build(b)
	}
}

func (r *registration) fromBuilder(prev clause.ClauseBuilder) clause.ClauseBuilder {
	return func(c clause.Clause, b clause.Builder) {
		if stmt, ok := b.(*gorm.Statement); ok && !writing(stmt) {
			if l, ok := statementLock(stmt); ok {
				renderFromHinted(r.target, c, stmt, l)
				return
			}
		}
		if prev != nil {
			prev(c, b)
			return
		}
		c.Build(b)
	}
}

// beforeQuery validates the statement's lock before GORM builds the SQL, so
// that nothing is sent for a lock that cannot be honoured.
func (r *registration) beforeQuery(db *gorm.DB) {
	if db.Error != nil {
		return
	}
	stmt := db.Statement
	c, ok := stmt.Clauses[clauseName]
	if !ok {
		return
	}
	l, converted, ok := lockFromClause(c)
	if !ok {
		return
	}
	if converted {
		// GORM's clause.Locking: from here on it is a lockplugin lock, so
		// it is rendered per database like one.
		c.Expression = l
		c.Builder = buildForFallback
		stmt.Clauses[clauseName] = c
	}
	stmt.Settings.Store(targetKey, r.target)
	stmt.Settings.Delete(writerLockedKey)
	if err := r.validate(stmt, l); err != nil {
		refuse(db.Statement, err)
		return
	}
	if r.target.writerLock {
		if err := r.target.takeWriterLock(stmt, l); err != nil {
			refuse(db.Statement, err)
			return
		}
		stmt.Settings.Store(writerLockedKey, true)
	}
	if r.target.hints {
		stmt.Settings.Delete(hintedKey)
		fc := stmt.Clauses["FROM"]
		fc.Name = "FROM"
		if fc.Expression == nil {
			fc.Expression = clause.From{}
		}
		fc.Builder = buildFromFallback
		stmt.Clauses["FROM"] = fc
	}
	stmt.Settings.Delete(waitRestoreKey)
	if !stmt.DB.DryRun {
		if err := r.target.setWait(stmt, l); err != nil {
			refuse(stmt, err)
		}
	}
}

// beforeRow is beforeQuery for Row and Rows, which refuse a wait bounded by
// a setting (see target.rowsOpen).
func (r *registration) beforeRow(db *gorm.DB) {
	if db.Error == nil {
		if l, ok := statementLock(db.Statement); ok {
			if err := r.target.rowsOpen(db.Statement, l); err != nil {
				refuse(db.Statement, err)
				return
			}
		}
	}
	r.beforeQuery(db)
}

func (r *registration) validate(stmt *gorm.Statement, l lock) error {
	if stmt.SQL.Len() > 0 {
		return rawSQLError(l, stmt)
	}
	if err := r.target.check(stmt, l); err != nil {
		return err
	}
	if !r.cfg.AllowOutsideTransaction && !stmt.DB.DryRun && !plugin.InTransaction(stmt.ConnPool) {
		return fmt.Errorf("%w: %s would hold its locks only while the statement runs; run it inside db.Transaction", ErrNotInTransaction, l.describe(stmt))
	}
	return nil
}

// beforeRaw refuses Exec with a lock clause, which GORM would ignore.
func (r *registration) beforeRaw(db *gorm.DB) {
	if db.Error != nil {
		return
	}
	if l, ok := statementLock(db.Statement); ok {
		refuse(db.Statement, rawSQLError(l, db.Statement))
	}
}

func rawSQLError(l lock, stmt *gorm.Statement) error {
	return fmt.Errorf("%w: %s on Raw or Exec SQL, which GORM sends as written; put the locking clause in the SQL itself, or build the query with GORM's methods", ErrInvalidLock, l.describe(stmt))
}

// subqueryErrors replaces the error of a statement that embedded a
// subquery whose lock was refused (the database's complaint about the
// marker, or the argument conversion's) with the refusal itself.
func subqueryErrors(db *gorm.DB) {
	if db.Error == nil {
		return
	}
	if err := refusedIn(db.Statement.Vars); err != nil && !errors.Is(db.Error, err) {
		db.Error = fmt.Errorf("%w (in a subquery; nothing was run)", err)
	}
}

// afterQuery turns the database's own "lock not available" error of a
// locking read into one that matches dialects.ErrLockNotAvailable.
func (r *registration) afterQuery(db *gorm.DB) {
	subqueryErrors(db)
	if db.Error == nil {
		return
	}
	l, ok := statementLock(db.Statement)
	if !ok {
		return
	}
	if l.skipLocked {
		if err := r.target.rl.SkipLockedRefused(db.Error, l.describe(db.Statement)); err != nil {
			db.Error = err
			return
		}
	}
	db.Error = r.target.d.WrapLockNotAvailable(db.Error)
}

// afterRow is afterQuery for Row and Rows. A refused Row() would otherwise
// hand its caller a nil *sql.Row, and row.Scan would panic: GORM's Row()
// has no error to return. It gets a *sql.Row whose Scan reports the
// refusal instead.
func (r *registration) afterRow(db *gorm.DB) {
	r.afterQuery(db)
	if db.Error == nil {
		return
	}
	if _, ok := db.Statement.Clauses[clauseName]; !ok {
		return
	}
	if rows, ok := db.Get("rows"); ok && rows == true {
		return // Rows() returns db.Error itself
	}
	switch db.Statement.Dest.(type) {
	case *sql.Row, *sql.Rows:
		return // gorm:row ran; the driver's error is in there
	}
	db.Statement.Dest = errRow(db.Error)
}
