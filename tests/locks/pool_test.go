package locks

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"

	"gorm.io/gorm"
)

// errFakePool is what countingPool answers when it has no database behind
// it: the statement was counted, and that is all the test needs.
var errFakePool = errors.New("lk: counting pool without a database")

// countingPool is a gorm.ConnPool that counts every statement sent through
// it, inside transactions too, so that a test can prove that nothing
// reached the database. With a nil inner pool it sends nothing anywhere
// and fails every statement with errFakePool.
type countingPool struct {
	inner *sql.DB
	// fail, when set, is what a pool without a database answers instead
	// of errFakePool: a driver error the test wants GORM to see.
	fail error
	sent atomic.Int64
}

func (p *countingPool) noDatabase() error {
	if p.fail != nil {
		return p.fail
	}
	return errFakePool
}

func (p *countingPool) statements() int64 { return p.sent.Load() }

func (p *countingPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	p.sent.Add(1)
	if p.inner == nil {
		return nil, p.noDatabase()
	}
	return p.inner.ExecContext(ctx, query, args...)
}

func (p *countingPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	p.sent.Add(1)
	if p.inner == nil {
		return nil, p.noDatabase()
	}
	return p.inner.QueryContext(ctx, query, args...)
}

func (p *countingPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	p.sent.Add(1)
	if p.inner == nil {
		panic("lk: QueryRowContext on a counting pool without a database")
	}
	return p.inner.QueryRowContext(ctx, query, args...)
}

func (p *countingPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if p.inner == nil {
		return nil, errFakePool
	}
	return p.inner.PrepareContext(ctx, query)
}

// BeginTx makes gorm's Transaction work over the pool (gorm.ConnPoolBeginner).
func (p *countingPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	t := &countingTx{pool: p}
	if p.inner != nil {
		tx, err := p.inner.BeginTx(ctx, opts)
		if err != nil {
			return nil, err
		}
		t.tx = tx
	}
	return t, nil
}

// countingTx is a transaction of a countingPool.
type countingTx struct {
	pool *countingPool
	tx   *sql.Tx
}

func (t *countingTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	t.pool.sent.Add(1)
	if t.tx == nil {
		return nil, t.pool.noDatabase()
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t *countingTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	t.pool.sent.Add(1)
	if t.tx == nil {
		return nil, t.pool.noDatabase()
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t *countingTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	t.pool.sent.Add(1)
	if t.tx == nil {
		panic("lk: QueryRowContext on a counting pool without a database")
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (t *countingTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if t.tx == nil {
		return nil, errFakePool
	}
	return t.tx.PrepareContext(ctx, query)
}

// StmtContext makes countingTx a gorm.Tx, for PrepareStmt sessions.
func (t *countingTx) StmtContext(ctx context.Context, stmt *sql.Stmt) *sql.Stmt {
	if t.tx == nil {
		return stmt
	}
	return t.tx.StmtContext(ctx, stmt)
}

func (t *countingTx) Commit() error {
	if t.tx == nil {
		return nil
	}
	return t.tx.Commit()
}

func (t *countingTx) Rollback() error {
	if t.tx == nil {
		return nil
	}
	return t.tx.Rollback()
}
