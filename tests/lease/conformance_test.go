package lease_test

import (
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/leasetest"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore/pgnotify"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestConformance runs the store conformance suite on every store: the
// local store, the table store on every database, and the Redis store.
func TestConformance(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		dir := t.TempDir()
		leasetest.Run(t, func(t *testing.T) lease.Store {
			s, err := lease.NewLocalStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, leasetest.Prefix(namePrefix), leasetest.IgnoresTTL(), leasetest.InstanceHolds())
	})
	t.Run("table", func(t *testing.T) {
		testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
			leasetest.Run(t, func(t *testing.T) lease.Store { return tableStore(t, tg.DB) }, leasetest.Prefix(namePrefix))
		})
		// PostgreSQL with Listen: WaitFree waits on LISTEN (the suite's
		// WaitFree check runs; without Listen the store answers
		// ErrUnsupported and it is skipped).
		t.Run("postgres-listen", func(t *testing.T) {
			tg := testdb.Get(t, testdb.Postgres)
			leasetest.Run(t, func(t *testing.T) lease.Store {
				s, err := sqlstore.New(tg.DB, sqlstore.Table(table), pgnotify.Listen())
				if err != nil {
					t.Fatal(err)
				}
				return s
			}, leasetest.Prefix(namePrefix))
		})
		// MySQL's RowsAffected changes meaning with clientFoundRows; the
		// store must not depend on it.
		t.Run("mysql-clientFoundRows", func(t *testing.T) {
			tg := testdb.Open(t, testdb.MySQL, func(dsn string) string {
				if strings.Contains(dsn, "?") {
					return dsn + "&clientFoundRows=true"
				}
				return dsn + "?clientFoundRows=true"
			})
			leasetest.Run(t, func(t *testing.T) lease.Store { return tableStore(t, tg.DB) }, leasetest.Prefix(namePrefix))
		})
	})
	t.Run("redis", func(t *testing.T) {
		leasetest.Run(t, func(t *testing.T) lease.Store {
			s, _ := redisStore(t)
			return s
		}, leasetest.Prefix(namePrefix))
	})
}
