package holds

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// Migrate creates the holds table, DefaultTable or the one named with Table,
// and the index that counting a resource's active holds walks. It leaves an
// existing table alone, so it is safe to run at every start. It runs with
// db's context.
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
	sess, d, err := begin(ctx, db)
	if err != nil {
		return err
	}
	for _, ddl := range newStatements(d, cfg.table).createTable() {
		if err := sess.Exec(ddl).Error; err != nil {
			return fmt.Errorf("holds: creating table %s on %s: %w", cfg.table, d, err)
		}
	}
	return nil
}
