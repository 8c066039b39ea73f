package holds

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"gorm.io/gorm"
)

// ended returns the cause of the first of ctx and db's own context to have
// ended already, nil while both run. It reads db's context itself: a join
// learns of an end through a callback that may not have run yet.
func ended(ctx context.Context, db *gorm.DB) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if db != nil && db.Statement != nil && db.Statement.Context != nil && db.Statement.Context.Err() != nil {
		return context.Cause(db.Statement.Context)
	}
	return nil
}

// ctxError makes an error that happened because ctx ended say so. When ctx
// ends during a transaction, database/sql rolls the transaction back behind
// the statements' backs, and the next one fails with "transaction has
// already been committed or rolled back", which says nothing of why; the
// caller gets ctx's error (its cause) instead. Other errors are wrapped
// with it, so that errors.Is finds both.
func ctxError(ctx context.Context, err error) error {
	if err == nil || ctx == nil || ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(err, cause), errors.Is(err, ctx.Err()):
		return err
	case errors.Is(err, sql.ErrTxDone), errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone):
		return cause
	}
	return fmt.Errorf("%w (%w)", cause, err)
}
