package driverhook

import (
	"context"
	"database/sql/driver"
)

// wrappedStmt runs the statement hooks around a prepared statement. The
// deprecated driver.ColumnConverter of the wrapped statement is not
// forwarded: its checks fall back to the connection's CheckNamedValue,
// then database/sql's default conversion.
type wrappedStmt struct {
	driver.Stmt
	conn *wrappedConn
	q    string
}

func (s *wrappedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	exec := func() (driver.Result, error) { return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args) }
	if _, ok := s.Stmt.(driver.StmtExecContext); !ok {
		vals, err := values(args)
		if err != nil {
			return nil, err
		}
		exec = func() (driver.Result, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			//lint:ignore SA1019 the fallback for statements without ExecContext
			return s.Stmt.Exec(vals)
		}
	}
	if err := s.conn.h.before(ctx, s.q, args); err != nil {
		return nil, err
	}
	res, err := exec()
	return afterResult(ctx, s.conn.h, s.q, res, err)
}

func (s *wrappedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	query := func() (driver.Rows, error) { return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args) }
	if _, ok := s.Stmt.(driver.StmtQueryContext); !ok {
		vals, err := values(args)
		if err != nil {
			return nil, err
		}
		query = func() (driver.Rows, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			//lint:ignore SA1019 the fallback for statements without QueryContext
			return s.Stmt.Query(vals)
		}
	}
	if err := s.conn.h.before(ctx, s.q, args); err != nil {
		return nil, err
	}
	rows, err := query()
	return afterRows(ctx, s.conn.h, s.q, rows, err)
}

func (s *wrappedStmt) CheckNamedValue(v *driver.NamedValue) error {
	if nc, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(v)
	}
	return s.conn.CheckNamedValue(v)
}
