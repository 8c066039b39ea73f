package driverhook

import (
	"context"
	"database/sql/driver"
	"errors"
)

// wrappedConn runs the hooks around one connection of the wrapped driver.
type wrappedConn struct {
	driver.Conn
	h *Hooks
}

func (c *wrappedConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	var query func(q string) (driver.Rows, error)
	switch qc := c.Conn.(type) {
	case driver.QueryerContext:
		query = func(q string) (driver.Rows, error) { return qc.QueryContext(ctx, q, args) }
	//lint:ignore SA1019 forwarded for drivers that have only the old interface
	case driver.Queryer:
		vals, err := values(args)
		if err != nil {
			return nil, err
		}
		query = func(q string) (driver.Rows, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return qc.Query(q, vals)
		}
	default:
		return nil, driver.ErrSkip
	}
	q = c.h.text(q)
	if err := c.h.before(ctx, q, args); err != nil {
		return nil, err
	}
	rows, err := query(q)
	if errors.Is(err, driver.ErrSkip) {
		return nil, err
	}
	return afterRows(ctx, c.h, q, rows, err)
}

func (c *wrappedConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	var exec func(q string) (driver.Result, error)
	switch ec := c.Conn.(type) {
	case driver.ExecerContext:
		exec = func(q string) (driver.Result, error) { return ec.ExecContext(ctx, q, args) }
	//lint:ignore SA1019 forwarded for drivers that have only the old interface
	case driver.Execer:
		vals, err := values(args)
		if err != nil {
			return nil, err
		}
		exec = func(q string) (driver.Result, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return ec.Exec(q, vals)
		}
	default:
		return nil, driver.ErrSkip
	}
	q = c.h.text(q)
	if err := c.h.before(ctx, q, args); err != nil {
		return nil, err
	}
	res, err := exec(q)
	if errors.Is(err, driver.ErrSkip) {
		return nil, err
	}
	return afterResult(ctx, c.h, q, res, err)
}

// Prepare keeps the old entry hooked too; database/sql calls PrepareContext.
func (c *wrappedConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

func (c *wrappedConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	q = c.h.text(q)
	var st driver.Stmt
	var err error
	if pc, ok := c.Conn.(driver.ConnPrepareContext); ok {
		st, err = pc.PrepareContext(ctx, q)
	} else {
		st, err = c.Conn.Prepare(q)
		if err == nil && ctx.Err() != nil {
			_ = st.Close()
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	if c.h.OnPrepare != nil {
		c.h.OnPrepare(q)
	}
	return &wrappedStmt{Stmt: st, conn: c, q: q}, nil
}

// Begin keeps the old entry hooked too; database/sql calls BeginTx.
func (c *wrappedConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *wrappedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var tx driver.Tx
	var err error
	if bc, ok := c.Conn.(driver.ConnBeginTx); ok {
		tx, err = bc.BeginTx(ctx, opts)
	} else {
		// What database/sql does for a driver without BeginTx.
		if opts.Isolation != driver.IsolationLevel(0) {
			return nil, errors.New("sql: driver does not support non-default isolation level")
		}
		if opts.ReadOnly {
			return nil, errors.New("sql: driver does not support read-only transactions")
		}
		//lint:ignore SA1019 the fallback for drivers without BeginTx
		tx, err = c.Conn.Begin()
		if err == nil && ctx.Err() != nil {
			_ = tx.Rollback()
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	if c.h.OnBegin != nil {
		c.h.OnBegin()
	}
	return &wrappedTx{Tx: tx, h: c.h}, nil
}

func (c *wrappedConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *wrappedConn) CheckNamedValue(v *driver.NamedValue) error {
	if nc, ok := c.Conn.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(v)
	}
	return driver.ErrSkip
}

func (c *wrappedConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *wrappedConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// afterRows runs AfterStatement for a query; rows it discards are closed.
func afterRows(ctx context.Context, h *Hooks, q string, rows driver.Rows, err error) (driver.Rows, error) {
	if ferr := h.after(ctx, q, err); ferr != nil {
		if err == nil {
			_ = rows.Close()
		}
		return nil, ferr
	}
	return rows, nil
}

// afterResult runs AfterStatement for an exec.
func afterResult(ctx context.Context, h *Hooks, q string, res driver.Result, err error) (driver.Result, error) {
	if ferr := h.after(ctx, q, err); ferr != nil {
		return nil, ferr
	}
	return res, nil
}

// values is database/sql's conversion for drivers without the context
// interfaces, which take no named arguments.
func values(args []driver.NamedValue) ([]driver.Value, error) {
	vals := make([]driver.Value, len(args))
	for i, a := range args {
		if a.Name != "" {
			return nil, errors.New("sql: driver does not support the use of Named Parameters")
		}
		vals[i] = a.Value
	}
	return vals, nil
}

// Unwrap returns the wrapped driver's connection, for code that needs the
// driver's own type (lease/sqlstore/pgnotify reads notifications with it).
func (c *wrappedConn) Unwrap() driver.Conn { return c.Conn }
