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

// TiDB's statements. The MySQL statements read the fence an UPDATE took
// from the OK packet's insert id (LAST_INSERT_ID(expr)), and TiDB keeps the
// insert id of an attempt it threw away: it retries an autocommit UPDATE
// that met a write conflict, and a retry that then matches no row still
// reports the first attempt's fence (measured: 8 workers on one name, 110
// of 375 acquires reported granted while another owner held the lease). So
// on TiDB each operation is one pessimistic transaction (inTx) that reads
// the row under an exclusive lock (FOR UPDATE reads the latest commit
// there), decides from what it read, writes, and reads the fence back in
// the same transaction. Nothing depends on the insert id or on
// RowsAffected.
const (
	// tidbRead locks the row and says whether it is the caller's and
	// whether it is live, by the database's clock.
	tidbRead = `SELECT fence, CASE WHEN owner = {owner} THEN 1 ELSE 0 END, ` +
		`CASE WHEN expires_at = 0 OR expires_at > {now} THEN 1 ELSE 0 END FROM {t} WHERE lock_name = {name} FOR UPDATE`
	// tidbTake takes a released or expired lease: a new owner, a new
	// expiry, the fence bumped.
	tidbTake = `UPDATE {t} SET owner = {owner}, expires_at = {exp}, fence = fence + 1 WHERE lock_name = {name}`
	// tidbRenew renews the caller's own live lease (a retried acquire):
	// its fence stays.
	tidbRenew = `UPDATE {t} SET expires_at = {exp} WHERE lock_name = {name}`
	// tidbInsert takes a name that has no row yet.
	tidbInsert = `INSERT INTO {t} (lock_name, owner, expires_at, fence) VALUES ({name}, {owner}, {exp}, 1)`
	// tidbFence reads the fence back inside the transaction that wrote it.
	tidbFence = `SELECT fence FROM {t} WHERE lock_name = {name} FOR UPDATE`
	// tidbHeld locks the row while the caller holds it; release and
	// refresh then write it with plainRelease and plainRefresh.
	tidbHeld = `SELECT 1 FROM {t} WHERE ` + heldTmpl + ` FOR UPDATE`
)

// tidbBegin begins inTx's transaction on a pinned connection.
const tidbBegin = "BEGIN PESSIMISTIC"

// tidbStatements are the statements of the TiDB transactions.
type tidbStatements struct {
	read, take, renew, insert, fence, held stmt
}

// txQuerier is what the statements of a TiDB transaction run on: the
// pinned connection of a BEGIN PESSIMISTIC, or a *sql.Tx.
type txQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// txEndTimeout bounds the ROLLBACK of a transaction whose context ended.
const txEndTimeout = 2 * time.Second

// inTx runs fn in a transaction and commits it; fn's error rolls it back.
// On a *sql.DB (what GORM holds) the transaction is BEGIN PESSIMISTIC on a
// pinned connection, whatever tidb_txn_mode says: in an optimistic one
// even a refusal's locking read conflicts at COMMIT (measured with
// tidb_txn_mode = optimistic: 8 workers on one name failed with 9007 after
// 3 attempts each). A connection whose transaction could not be ended is
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
	if _, err := conn.ExecContext(ctx, tidbBegin); err != nil {
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

// tidbAcquire is acquire on TiDB: fence stays 0 when the lease is held by
// someone else.
func (s *Store) tidbAcquire(ctx context.Context, v values, fence *int64) error {
	st := s.stmts.tidb
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

// tidbUpdate is release or refresh on TiDB: it writes only a row it has
// locked and seen the caller hold, and returns 1 when it did, 0 when the
// caller does not hold the lease.
func (s *Store) tidbUpdate(ctx context.Context, write stmt, v values) (int64, error) {
	var held bool
	err := s.inTx(ctx, func(tx txQuerier) error {
		var one int64
		var err error
		held, err = s.txQuery(ctx, tx, s.stmts.tidb.held, v, &one)
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
