package version_test

import (
	"testing"

	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"

	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dbresolver beside the plugin: writes go to the source, the guard holds,
// and a conflict is still reported (the row is read again on the failed
// write's own connection, never on a replica).
func TestWithDBResolver(t *testing.T) {
	testdb.Each(t, func(t *testing.T, shared *testdb.Target) {
		tg := testdb.Open(t, shared.Kind(), nil)
		require.NoError(t, tg.DB.Use(dbresolver.Register(dbresolver.Config{
			Replicas: []gorm.Dialector{testdb.Dialector(shared.Kind(), shared.DSN)},
		})))
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &Book{})
		a, b := twoCopies(t, db)
		a.Title = "winner"
		require.NoError(t, db.Save(&a).Error)
		assert.EqualValues(t, 2, a.Version)
		b.Title = "loser"
		requireConflict(t, db.Save(&b).Error, &b, "update", 1, 2, false)
		requireConflict(t, db.Delete(&b).Error, &b, "delete", 1, 2, false)
		assert.EqualValues(t, "winner", load[Book](t, db.Clauses(dbresolver.Write), a.ID).Title)
	})
}
