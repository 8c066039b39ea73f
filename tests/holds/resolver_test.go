package holds_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// replicaDB is the empty database the replica pools open: a replica that
// lags as far as a replica can, made by the test on the shared server.
const replicaDB = "i12_replica"

// withDatabase swaps the database of a PostgreSQL keyword DSN or a
// go-sql-driver DSN.
func withDatabase(kind, dsn, name string) string {
	if kind == testdb.Postgres {
		fields := strings.Fields(dsn)
		for i, f := range fields {
			if strings.HasPrefix(f, "dbname=") {
				fields[i] = "dbname=" + name
				return strings.Join(fields, " ")
			}
		}
		return dsn + " dbname=" + name
	}
	slash := strings.LastIndex(dsn, "/")
	rest := dsn[slash+1:]
	q := ""
	if i := strings.Index(rest, "?"); i >= 0 {
		q = rest[i:]
	}
	return dsn[:slash+1] + name + q
}

func createReplica(t *testing.T, tg *testdb.Target) {
	t.Helper()
	if tg.Kind() == testdb.Postgres {
		var n int64
		require.NoError(t, tg.Plain.Raw("SELECT count(*) FROM pg_database WHERE datname = ?", replicaDB).Scan(&n).Error)
		if n == 0 {
			if err := tg.Plain.Exec("CREATE DATABASE " + replicaDB).Error; err != nil && !strings.Contains(err.Error(), "already exists") {
				require.NoError(t, err)
			}
		}
		return
	}
	require.NoError(t, tg.Plain.Exec("CREATE DATABASE IF NOT EXISTS "+replicaDB).Error)
}

// Under dbresolver every read and write of holds goes to the source: with
// an empty replica (no holds table at all) Acquire, Available, IsFull,
// ActiveFor, Extend and Release all work and agree with the source, with
// lockplugin registered before or after dbresolver.
func TestHoldsWithDBResolverEmptyReplica(t *testing.T) {
	for _, kind := range []string{testdb.Postgres, testdb.MySQL} {
		t.Run(kind, func(t *testing.T) {
			tg := testdb.Get(t, kind)
			setup(t, tg)
			createReplica(t, tg)
			for _, order := range []string{"lockplugin first", "dbresolver first"} {
				t.Run(order, func(t *testing.T) {
					db, err := gorm.Open(testdb.Dialector(kind, tg.DSN), &gorm.Config{Logger: logger.Discard})
					require.NoError(t, err)
					resolver := dbresolver.Register(dbresolver.Config{
						Replicas: []gorm.Dialector{testdb.Dialector(kind, withDatabase(kind, tg.DSN, replicaDB))},
					})
					if order == "lockplugin first" {
						require.NoError(t, db.Use(lockplugin.New()))
						require.NoError(t, db.Use(resolver))
					} else {
						require.NoError(t, db.Use(resolver))
						require.NoError(t, db.Use(lockplugin.New()))
					}
					t.Cleanup(func() {
						_ = resolver.Call(func(p gorm.ConnPool) error {
							if c, ok := p.(interface{ Close() error }); ok {
								_ = c.Close()
							}
							return nil
						})
						if s, err := db.DB(); err == nil {
							_ = s.Close()
						}
					})
					// The resolver is live: a plain read goes to the empty replica.
					var n int64
					require.Errorf(t, db.Raw("SELECT count(*) FROM "+holdsTable).Scan(&n).Error, "a plain read found %s: reads do not go to the empty replica, the test cannot fail", holdsTable)
					require.NoError(t, holds.Migrate(db, inTable), "Migrate")

					ctx := context.Background()
					s := newSeat(t, tg.DB, 2)
					h, err := holds.Acquire(ctx, db, s, "alice", inTable)
					require.NoError(t, err, "Acquire")
					require.NotNil(t, h)
					again, err := holds.Acquire(ctx, db, s, "alice", inTable)
					require.NoError(t, err, "Acquire again")
					require.Equal(t, h.ID, again.ID)
					free, err := holds.Available(ctx, db, s, inTable)
					require.NoError(t, err, "Available")
					require.Equal(t, 1, free)
					full, err := holds.IsFull(ctx, db, s, inTable)
					require.NoError(t, err, "IsFull")
					require.False(t, full)
					mine, err := holds.ActiveFor(ctx, db, s, "alice", inTable)
					require.NoError(t, err, "ActiveFor")
					require.NotNil(t, mine)
					require.NoError(t, holds.Extend(ctx, db, h, time.Minute), "Extend")
					require.NoError(t, holds.Release(ctx, db, h), "Release")
					require.NotNil(t, h.ReleasedAt)
					free, err = holds.Available(ctx, db, s, inTable)
					require.NoError(t, err)
					require.Equal(t, 2, free, "Available after Release")
					require.Equal(t, int64(0), activeRows(t, tg.DB, s), "the source still has the hold")
					t.Logf("%s, %s: 7 operations, all on the source", tg.Name, order)
				})
			}
		})
	}
}
