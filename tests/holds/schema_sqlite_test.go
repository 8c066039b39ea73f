package holds_test

import (
	"context"
	"testing"

	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestMigrateSchemaQualifiedSQLite: holds.Migrate with a schema-qualified
// table on SQLite creates the table and its index (it used to render
// CREATE INDEX ... ON "main"."t", a syntax error), and holds work there.
func TestMigrateSchemaQualifiedSQLite(t *testing.T) {
	tg := testdb.Get(t, testdb.SQLite)
	in := holds.Table("main.i28_schema_holds")
	_ = tg.DB.Exec(`DROP TABLE IF EXISTS "main"."i28_schema_holds"`).Error
	if err := holds.Migrate(tg.DB, in); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if err := holds.Migrate(tg.DB, in); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	var n int
	if err := tg.DB.Raw(`SELECT COUNT(*) FROM main.sqlite_master WHERE type = 'index' AND name = 'i28_schema_holds_active' AND tbl_name = 'i28_schema_holds'`).Scan(&n).Error; err != nil || n != 1 {
		t.Fatalf("index: %d, %v", n, err)
	}
	setup(t, tg)
	s := newSeat(t, tg.DB, 1)
	h, err := holds.Acquire(context.Background(), tg.DB, s, "i28-alice", in)
	if err != nil || h == nil {
		t.Fatalf("Acquire: %v", err)
	}
	_ = h.Release(context.Background())
}
