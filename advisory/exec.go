package advisory

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/dialects"
)

// querier is what statements run on: the pinned *sql.Conn, or the
// transaction behind a WithTx.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// runner sends statements on one querier and reports each to db's logger,
// as GORM would have.
type runner struct {
	db *gorm.DB
	q  querier
}

// query runs st and scans its single row into dest. Oracle OUT binds
// (outParam in st.args) are bound to dest in order instead; such a
// statement returns no row.
func (r runner) query(ctx context.Context, st statement, dest ...any) error {
	begin := time.Now()
	args := st.args
	var err error
	if hasOut(args) {
		args = make([]any, len(st.args))
		i := 0
		for j, a := range st.args {
			if _, ok := a.(outParam); ok {
				args[j] = sql.Out{Dest: dest[i]}
				i++
				continue
			}
			args[j] = a
		}
		_, err = r.q.ExecContext(ctx, st.sql, args...)
	} else if len(dest) == 0 {
		_, err = r.q.ExecContext(ctx, st.sql, args...)
	} else if st.held != "" {
		err = r.guarded(ctx, st, dest)
	} else {
		err = r.q.QueryRowContext(ctx, st.sql, args...).Scan(dest...)
	}
	r.trace(ctx, begin, st, err)
	return err
}

// guarded runs a statement that has a held answer (TiDB, see
// internal/drivers/tidb/advisory.go): its guard first, if any, in a
// transaction of its own (between guardBegin and guardEnd), and sql unless the guard
// found the name held. A guard that fails otherwise (no privilege to read
// the table) does not decide: sql is sent. When sql gives up holding
// nothing (TiDB's 1105 under contention), held is the answer too.
func (r runner) guarded(ctx context.Context, st statement, dest []any) error {
	if st.guard != "" {
		if _, err := r.q.ExecContext(ctx, st.guardBegin); err != nil {
			return err
		}
		rows, gerr := r.q.QueryContext(ctx, st.guard, st.guardArg)
		if gerr == nil {
			gerr = rows.Close()
		}
		if _, err := r.q.ExecContext(ctx, st.guardEnd); err != nil {
			return err
		}
		if dialects.IsLockNotAvailable(gerr) {
			return r.q.QueryRowContext(ctx, st.held).Scan(dest...)
		}
	}
	err := r.q.QueryRowContext(ctx, st.sql, st.args...).Scan(dest...)
	if (dialects.IsTiDBLockRetryLimit(err) || dialects.IsTiDBLockWaitTimeout(err)) && ctx.Err() == nil {
		return r.q.QueryRowContext(ctx, st.held).Scan(dest...)
	}
	return err
}

func (r runner) trace(ctx context.Context, begin time.Time, st statement, err error) {
	if r.db == nil || r.db.Config == nil || r.db.Logger == nil || r.db.Logger == logger.Discard {
		return // nothing to report to: no message to build
	}
	if dialects.IsLockNotAvailable(err) {
		// A lock wait that ran out is an answer, not a fault to log.
		err = nil
	}
	r.db.Logger.Trace(ctx, begin, func() (string, int64) {
		vars := make([]any, 0, len(st.args))
		for _, a := range st.args {
			if _, ok := a.(outParam); !ok {
				vars = append(vars, a)
			}
		}
		if r.db.Dialector == nil {
			return st.sql, -1
		}
		return r.db.Dialector.Explain(st.sql, vars...), -1
	}, err)
}

func hasOut(args []any) bool {
	for _, a := range args {
		if _, ok := a.(outParam); ok {
			return true
		}
	}
	return false
}

// discard closes conn's underlying connection instead of returning it to
// the pool: the server ends the session, and with it any lock the session
// might still hold.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}
