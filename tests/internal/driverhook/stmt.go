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
	if err := s.conn.h.before(ctx, s.q, args); err != nil {
		return nil, err
	}
	var res driver.Result
	var err error
	if ec, ok := s.Stmt.(driver.StmtExecContext); ok {
		res, err = ec.ExecContext(ctx, args)
	} else if vals, verr := values(args); verr != nil {
		return nil, verr
	} else if err = ctx.Err(); err == nil {
		//lint:ignore SA1019 the fallback for statements without ExecContext
		res, err = s.Stmt.Exec(vals)
	}
	return afterResult(ctx, s.conn.h, s.q, res, err)
}

func (s *wrappedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.conn.h.before(ctx, s.q, args); err != nil {
		return nil, err
	}
	var rows driver.Rows
	var err error
	if qc, ok := s.Stmt.(driver.StmtQueryContext); ok {
		rows, err = qc.QueryContext(ctx, args)
	} else if vals, verr := values(args); verr != nil {
		return nil, verr
	} else if err = ctx.Err(); err == nil {
		//lint:ignore SA1019 the fallback for statements without QueryContext
		rows, err = s.Stmt.Query(vals)
	}
	return afterRows(ctx, s.conn.h, s.q, rows, err)
}

func (s *wrappedStmt) CheckNamedValue(v *driver.NamedValue) error {
	if nc, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(v)
	}
	return s.conn.CheckNamedValue(v)
}
