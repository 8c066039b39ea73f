package sqlstore

import (
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/plugin"
	"github.com/lockplugin/lockplugin/lease"
)

// Guard makes a transaction commit only while l is still held: inside tx
// (on the database of the store's table) it checks that l's row names l's
// owner and has not expired by the DATABASE's clock, and locks the row
// until tx ends, so that no successor's acquire can take the lease over
// before tx commits or rolls back. "I still hold the lease" and "my
// writes commit" become one atomic fact: call Guard last, just before
// Commit, and roll back on its error.
//
//	err := db.Transaction(func(tx *gorm.DB) error {
//		if err := tx.Save(&report).Error; err != nil {
//			return err
//		}
//		return store.Guard(tx, l) // lease.ErrLeaseLost: roll back
//	})
//
// The lock is FOR SHARE on PostgreSQL (LOCK IN SHARE MODE on MariaDB and
// MySQL before 8.0.1): an acquire that would take the lease over is an
// UPDATE of the row, which waits for tx; the holder's own refreshes wait
// too, so keep guarded transactions short (a successor waits for them up
// to its CallTimeout). On SQLite it is the database's writer lock, taken
// by a write that changes nothing. SQL Server and Oracle are refused
// (ErrUnsupported) until tested there.
//
// Guard returns an error matching lease.ErrLeaseLost when the row shows
// another owner, a release or an expiry (or l's own safety deadline has
// passed), and another error when tx is not a transaction or the query
// fails. It sends nothing on the store's own connections.
//
// The Redis and local stores cannot join a database transaction: with
// them, protect the data with fenced writes (lockplugin.Fence and
// lockplugin.WithFence), which compare the lease's fence where the data is.
func (s *Store) Guard(tx *gorm.DB, l *lease.Lease) error {
	if err := s.usable(); err != nil {
		return err
	}
	if tx == nil || tx.Statement == nil || l == nil {
		return errors.New("sqlstore: Guard needs a transaction and a lease")
	}
	if !plugin.InTransaction(tx.Statement.ConnPool) {
		return errors.New("sqlstore: Guard needs a *gorm.DB inside a transaction (db.Transaction or db.Begin); outside one its lock would end with the statement")
	}
	if k := dialects.Of(tx).Kind; k != s.d.Kind {
		return fmt.Errorf("sqlstore: Guard's transaction is on %s, the store's table on %s", k, s.d.Kind)
	}
	select {
	case <-l.Done():
		return fmt.Errorf("sqlstore: guarding a transaction under %q: %w: its safety deadline passed or it was released", l.Name(), lease.ErrLeaseLost)
	default:
	}
	v := values{name: key(l.Name()), owner: l.Owner()}
	ctx := tx.Statement.Context
	pool := tx.Statement.ConnPool
	if s.stmts.noGuard {
		return &dialects.UnsupportedError{Dialect: s.d.String(), Feature: "lease-guarded transaction", Reason: "not yet tested there; use fenced writes"}
	}
	st := s.stmts.guard
	var held bool
	if s.stmts.guardWrite {
		res, err := pool.ExecContext(ctx, st.SQL, st.bind(v)...)
		if err != nil {
			return s.wrap("guard", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return s.wrap("guard", err)
		}
		held = n == 1
	} else {
		rows, err := pool.QueryContext(ctx, st.SQL, st.bind(v)...)
		if err != nil {
			return s.wrap("guard", err)
		}
		held = rows.Next()
		_ = rows.Close()
		if err := rows.Err(); err != nil {
			return s.wrap("guard", err)
		}
	}
	if !held {
		return fmt.Errorf("sqlstore: guarding a transaction under %q: %w: the table shows it released, expired or taken over; roll back", l.Name(), lease.ErrLeaseLost)
	}
	return nil
}
