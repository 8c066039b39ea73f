package advisory

import (
	"github.com/lockplugin/lockplugin/internal/plugin"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// WithTx takes the lock called name for the rest of tx's transaction: COMMIT
// or ROLLBACK releases it, and nothing else can. It suits connection poolers
// in transaction mode (PgBouncer), where a session lock would stay on a
// server connection that other clients go on to use.
//
// PostgreSQL uses pg_advisory_xact_lock (pg_try_advisory_xact_lock for
// WaitAtMost(0)) and SQL Server sp_getapplock with @LockOwner = 'Transaction';
// other databases return ErrUnsupported. Waits behave as in With, and
// the context is tx's. A busy lock returns an error matching ErrTimeout (and lockplugin.ErrBusy); on
// PostgreSQL a finite wait that runs out is a statement error, which aborts
// the transaction (WaitAtMost(0) does not). Within one transaction the lock is
// re-entrant, as the database's own.
func WithTx(tx *gorm.DB, name string, opts ...Option) error {
	if tx == nil || tx.Config == nil || tx.Statement == nil {
		return errNilDB
	}
	if name == "" {
		return errEmptyName
	}
	o, err := buildOptions(opts)
	if err != nil {
		return err
	}
	d := dialects.Of(tx)
	if err := d.Require(dialects.AdvisoryXactLock); err != nil {
		return err
	}
	if err := checkName(d, name); err != nil {
		return err
	}
	if tx.DryRun {
		return errDryRun
	}
	cp := tx.Statement.ConnPool
	if !plugin.InTransaction(cp) {
		return errNotInTransaction
	}
	st, err := xactPlan(d, name, o.wait)
	if err != nil {
		return err
	}
	ctx := tx.Statement.Context
	r := runner{db: tx, q: cp}
	switch family(d).Answers() {
	case sqldriver.AnswersBool:
		if o.wait.tryOnce() {
			var ok bool
			if err := r.query(ctx, st, &ok); err != nil {
				return lockError(d, name, err)
			}
			if !ok {
				return lockError(d, name, ErrTimeout)
			}
			return nil
		}
		var restored string
		if err := r.query(ctx, st, &restored); err != nil {
			if dialects.IsLockNotAvailable(err) {
				err = answer(ErrTimeout, " ("+err.Error()+")")
			}
			return lockError(d, name, err)
		}
	case sqldriver.AnswersAppLock:
		var code int64
		if err := r.query(ctx, st, &code); err != nil {
			return lockError(d, name, err)
		}
		if err := applockAnswer(code); err != nil {
			return lockError(d, name, err)
		}
	}
	return nil
}
