// Package driverhook wraps a database/sql driver so that tests can watch,
// rewrite, fail or pause the statements and transactions that reach it.
//
// Wrap takes a driver.Connector and a Hooks value of optional callbacks and
// returns a connector whose connections forward every optional interface of
// database/sql/driver the wrapped connection implements (ExecerContext,
// QueryerContext, ConnPrepareContext, ConnBeginTx, Pinger,
// NamedValueChecker, SessionResetter, Validator) and behave as database/sql
// would without the wrapper where it does not. Rows and results are the
// wrapped driver's own.
package driverhook

import (
	"context"
	"database/sql/driver"
)

// Hooks are the callbacks a wrapped driver runs; each one is optional. They
// may be called from many connections at once.
type Hooks struct {
	// Rewrite, when set, changes a statement's text before it is sent or
	// prepared. The other hooks see the rewritten text.
	Rewrite func(query string) string

	// BeforeStatement, when set, runs before a statement is sent, directly
	// or through a prepared statement; an error it returns is returned in
	// place of sending it. When the driver answers a direct statement with
	// driver.ErrSkip (MySQL with arguments and without interpolateParams),
	// database/sql prepares it and runs it again, and BeforeStatement sees
	// both attempts.
	BeforeStatement func(ctx context.Context, query string, args []driver.NamedValue) error

	// AfterStatement, when set, runs after the driver ran a statement,
	// directly or through a prepared statement (not when it answered
	// driver.ErrSkip), with the statement's error. What it returns is the
	// statement's error: return err to keep it. A non-nil error for a
	// statement that succeeded discards the result (closing its rows): the
	// statement took effect, and the caller sees a failure. It cannot turn a
	// failure into a success.
	AfterStatement func(ctx context.Context, query string, err error) error

	// OnPrepare, when set, runs after a statement was prepared.
	OnPrepare func(query string)

	// OnBegin, when set, runs after a transaction began.
	OnBegin func()

	// OnCommit and OnRollback, when set, run before a transaction's COMMIT
	// or ROLLBACK is sent, whatever its outcome.
	OnCommit, OnRollback func()
}

func (h *Hooks) text(q string) string {
	if h.Rewrite != nil {
		return h.Rewrite(q)
	}
	return q
}

func (h *Hooks) before(ctx context.Context, q string, args []driver.NamedValue) error {
	if h.BeforeStatement != nil {
		return h.BeforeStatement(ctx, q, args)
	}
	return nil
}

// after runs AfterStatement for a statement whose driver error is err and
// returns the error the caller gets: never nil when err is not.
func (h *Hooks) after(ctx context.Context, q string, err error) error {
	if h.AfterStatement == nil {
		return err
	}
	if herr := h.AfterStatement(ctx, q, err); herr != nil || err == nil {
		return herr
	}
	return err
}
