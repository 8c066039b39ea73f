package holds

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
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
	sess, d, _, done, err := begin(ctx, db)
	if err != nil {
		return err
	}
	defer done()
	st := newStatements(d, cfg.table)
	create := func(tx *gorm.DB) error {
		for _, ddl := range st.createTable() {
			if err := source(tx).Exec(ddl).Error; err != nil {
				return err
			}
		}
		return nil
	}
	if lock := st.migrateLock(); lock != "" {
		err = source(sess).Transaction(func(tx *gorm.DB) error {
			if err := source(tx).Exec(lock, migrateKey(d, cfg.table)).Error; err != nil {
				return fmt.Errorf("taking the migration lock: %w", err)
			}
			return create(tx)
		})
	} else {
		err = create(sess)
	}
	if err != nil {
		return fmt.Errorf("holds: creating table %s on %s: %w", cfg.table, d, err)
	}
	return nil
}

// migrateLock returns the statement that serialises concurrent Migrate
// calls inside their transactions, "" where the database needs none.
// Argument: migrateKey.
func (s statements) migrateLock() string {
	switch s.d.Kind {
	case dialects.Postgres:
		return "SELECT pg_advisory_xact_lock(?)"
	case dialects.SQLServer:
		return "DECLARE @r int; EXEC @r = sp_getapplock @Resource = ?, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = -1; " +
			"IF @r < 0 RAISERROR('sp_getapplock returned %d', 16, 1, @r)"
	}
	return ""
}

// migrateKey names the migration lock of one holds table: a bigint from
// the SHA-256 of its name on PostgreSQL, the name itself on SQL Server.
func migrateKey(d dialects.Dialect, table string) any {
	name := "lockplugin/holds.Migrate " + table
	if d.Kind == dialects.Postgres {
		sum := sha256.Sum256([]byte(name))
		return int64(binary.BigEndian.Uint64(sum[:8]) &^ (1 << 63))
	}
	return name
}
