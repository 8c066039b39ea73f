package holds

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// Migrate creates the holds table, DefaultTable or the one named with Table,
// and the index that counting a resource's active holds walks. It leaves an
// existing table alone, so it is safe to run at every start, and safe when
// several processes start together on a fresh database: on PostgreSQL and
// SQL Server it runs in a transaction that first takes a transaction-scoped
// lock named after the table, so that concurrent CREATE TABLE IF NOT EXISTS
// statements (which race there: duplicate pg_type rows, "already exists")
// run one after the other; MySQL, MariaDB and SQLite serialise such DDL
// themselves. It runs with db's context.
//
// A holds table made by an earlier version on MySQL or MariaDB has a
// VARCHAR holder column in a padding collation; it is left as it is, since
// the queries compare holders exactly on either column type.
func Migrate(db *gorm.DB, opts ...Option) error {
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	if db == nil || db.Statement == nil {
		return fmt.Errorf("%w: nil *gorm.DB", ErrInvalid)
	}
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := begin(ctx, db, cfg.table)
	if err != nil {
		return err
	}
	defer c.done()
	ctx, d := c.ctx, c.d
	create := func(r runner) error {
		for _, ddl := range c.st.createTable() {
			if _, err := r.exec(ctx, ddl); err != nil {
				return err
			}
		}
		return nil
	}
	if lock := c.st.migrateLock(); lock != "" {
		lockThenCreate := func(r runner) error {
			if _, err := r.exec(ctx, bind(c.st.dr, lock), c.st.migrateKey()); err != nil {
				return fmt.Errorf("taking the migration lock: %w", err)
			}
			return create(r)
		}
		if c.callerTx {
			// In the caller's transaction: the lock lasts until it ends.
			err = lockThenCreate(c.runner(c.pool))
		} else {
			err = c.inTransaction(ctx, nil, lockThenCreate)
		}
	} else {
		err = create(c.runner(c.pool))
	}
	if err != nil {
		return fmt.Errorf("holds: creating table %s on %s: %w", cfg.table, d, ctxError(ctx, err))
	}
	return nil
}

// migrateLock returns the statement that serialises concurrent Migrate
// calls inside their transactions, "" where the database needs none.
// Argument: migrateKey.
func (s statements) migrateLock() string { return s.h.MigrateLock() }

// migrateKey names the migration lock of the holds table, as the
// database's lock takes a name (a bigint from its SHA-256 on PostgreSQL).
func (s statements) migrateKey() any {
	return s.h.MigrateKey("lockplugin/holds.Migrate " + s.table)
}
