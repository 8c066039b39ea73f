package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
)

// The statements of a database whose every operation is one transaction
// (sqldriver.LeaseTx: TiDB, whose insert id cannot be trusted; see
// internal/drivers/tidb/leasetable.go). Each operation reads the row under
// an exclusive lock, decides from what it read, writes, and reads the
// fence back in the same transaction. Nothing depends on the insert id or
// on RowsAffected.
type txStatements struct {
	begin                                  string
	read, take, renew, insert, fence, held stmt
}

// txQuerier is what the statements of a transaction (txStatements) run on: the
// pinned connection of a BEGIN PESSIMISTIC, or a *sql.Tx.
type txQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// txEndTimeout bounds the ROLLBACK of a transaction whose context ended.
const txEndTimeout = 2 * time.Second

// inTx runs fn in a transaction and commits it; fn's error rolls it back.
// On a *sql.DB (what GORM holds) the transaction is the driver's begin
// statement (BEGIN PESSIMISTIC on TiDB, whatever tidb_txn_mode says) on a
// pinned connection. A connection whose transaction could not be ended is
// closed, never returned to the pool. Another pool begins a *sql.Tx.
func (s *Store) inTx(ctx context.Context, fn func(tx txQuerier) error) error {
	db, ok := s.pool.(*sql.DB)
	if !ok {
		return s.inSQLTx(ctx, fn)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, s.stmts.tx.begin); err != nil {
		discard(conn)
		return err
	}
	if err := fn(conn); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), txEndTimeout)
		defer cancel()
		if _, rerr := conn.ExecContext(rctx, "ROLLBACK"); rerr != nil {
			discard(conn)
			return err
		}
		_ = conn.Close()
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		discard(conn)
		return err
	}
	return conn.Close()
}

// discard closes conn's connection instead of returning it to the pool.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

// inSQLTx is inTx on a pool that is not a *sql.DB (dbresolver and other
// wrappers): a *sql.Tx in the session's transaction mode.
func (s *Store) inSQLTx(ctx context.Context, fn func(tx txQuerier) error) error {
	var tx *sql.Tx
	var err error
	switch p := s.pool.(type) {
	case gorm.TxBeginner:
		tx, err = p.BeginTx(ctx, nil)
	case gorm.ConnPoolBeginner:
		var cp gorm.ConnPool
		if cp, err = p.BeginTx(ctx, nil); err == nil {
			var ok bool
			if tx, ok = cp.(*sql.Tx); !ok {
				return fmt.Errorf("sqlstore: the connection pool began a %T, not a *sql.Tx", cp)
			}
		}
	default:
		return fmt.Errorf("sqlstore: the connection pool (%T) cannot begin a transaction, which the table store needs on %s", s.pool, s.d)
	}
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// txQuery runs one statement of a transaction and reports it to the
// logger as exec does.
func (s *Store) txQuery(ctx context.Context, tx txQuerier, st stmt, v values, dest ...any) (bool, error) {
	begin := time.Now()
	args := st.bind(v)
	err := tx.QueryRowContext(ctx, st.SQL, args...).Scan(dest...)
	found := err == nil
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	rows := int64(0)
	if found {
		rows = 1
	}
	s.trace(ctx, begin, st.SQL, args, rows, err)
	return found, err
}

func (s *Store) txExec(ctx context.Context, tx txQuerier, st stmt, v values) error {
	begin := time.Now()
	args := st.bind(v)
	res, err := tx.ExecContext(ctx, st.SQL, args...)
	rows := int64(-1)
	if err == nil {
		rows, _ = res.RowsAffected()
	}
	s.trace(ctx, begin, st.SQL, args, rows, err)
	return err
}

// txAcquire is acquire as one transaction: fence stays 0 when the lease is
// held by someone else.
func (s *Store) txAcquire(ctx context.Context, v values, fence *int64) error {
	st := s.stmts.tx
	for attempt := 1; ; attempt++ {
		*fence = 0
		err := s.inTx(ctx, func(tx txQuerier) error {
			var cur, mine, live int64
			found, err := s.txQuery(ctx, tx, st.read, v, &cur, &mine, &live)
			if err != nil {
				return err
			}
			switch {
			case !found:
				err = s.txExec(ctx, tx, st.insert, v)
			case live == 1 && mine == 1:
				err = s.txExec(ctx, tx, st.renew, v)
			case live == 1:
				return nil // held by another owner: write nothing
			default:
				err = s.txExec(ctx, tx, st.take, v)
			}
			if err != nil {
				return err
			}
			_, err = s.txQuery(ctx, tx, st.fence, v, fence)
			return err
		})
		if err != nil {
			*fence = 0
		}
		// A name inserted by a concurrent acquire after this one read no
		// row: read it again, now that it has a row.
		if err != nil && attempt == 1 && dialects.IsDuplicateKey(err) && ctx.Err() == nil {
			continue
		}
		return err
	}
}

// txUpdate is release or refresh as one transaction: it writes only a row it has
// locked and seen the caller hold, and returns 1 when it did, 0 when the
// caller does not hold the lease.
func (s *Store) txUpdate(ctx context.Context, write stmt, v values) (int64, error) {
	var held bool
	err := s.inTx(ctx, func(tx txQuerier) error {
		var one int64
		var err error
		held, err = s.txQuery(ctx, tx, s.stmts.tx.held, v, &one)
		if err != nil || !held {
			return err
		}
		return s.txExec(ctx, tx, write, v)
	})
	if err != nil || !held {
		return 0, err
	}
	return 1, nil
}
