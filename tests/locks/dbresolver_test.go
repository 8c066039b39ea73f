package locks

import (
	"database/sql"
	"errors"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// poolLog records which connection pool each query ran on.
type poolLog struct {
	mu    sync.Mutex
	pools []gorm.ConnPool
}

func (l *poolLog) record(db *gorm.DB) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pools = append(l.pools, db.Statement.ConnPool)
}

func (l *poolLog) take() []gorm.ConnPool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.pools
	l.pools = nil
	return out
}

// TestDBResolverSendsLocksToPrimary: with a replica configured, a locking
// read goes to the primary, whatever order the plugins were registered in,
// while a plain read goes to the replica.
func TestDBResolverSendsLocksToPrimary(t *testing.T) {
	shared := testdb.Get(t, testdb.Postgres)
	resetRows(t, shared)
	for _, order := range []string{"lockplugin-first", "dbresolver-first"} {
		t.Run(order, func(t *testing.T) {
			primary, err := sql.Open("pgx", shared.DSN)
			if err != nil {
				t.Fatal(err)
			}
			replica, err := sql.Open("pgx", shared.DSN)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = primary.Close(); _ = replica.Close() })

			db, err := gorm.Open(postgres.New(postgres.Config{Conn: primary}), &gorm.Config{Logger: logger.Discard})
			if err != nil {
				t.Fatal(err)
			}
			lp := lockplugin.New(lockplugin.AllowLocksOutsideTransaction())
			dr := dbresolver.Register(dbresolver.Config{
				Replicas: []gorm.Dialector{postgres.New(postgres.Config{Conn: replica})},
			})
			plugins := []gorm.Plugin{lp, dr}
			if order == "dbresolver-first" {
				plugins = []gorm.Plugin{dr, lp}
			}
			for _, p := range plugins {
				if err := db.Use(p); err != nil {
					t.Fatal(err)
				}
			}
			log := &poolLog{}
			if err := db.Callback().Query().After("gorm:query").Register("lk:pool", log.record); err != nil {
				t.Fatal(err)
			}
			onReplica := func(p gorm.ConnPool) bool { return p == gorm.ConnPool(replica) }

			var rows []lkRow
			ctx := t.Context()
			if err := db.WithContext(ctx).Find(&rows).Error; err != nil {
				t.Fatal(err)
			}
			if got := log.take(); len(got) != 1 || !onReplica(got[0]) {
				t.Fatalf("a plain read should go to the replica (the resolver is not routing): %v", got)
			}

			if err := db.WithContext(ctx).Clauses(lockplugin.ForUpdate(lockplugin.SkipLocked)).Find(&rows).Error; err != nil {
				t.Fatal(err)
			}
			if got := log.take(); len(got) != 1 || got[0] != gorm.ConnPool(primary) {
				t.Fatalf("a locking read went to %v, want the primary", got)
			}

			err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
				return tx.Clauses(lockplugin.ForUpdate()).Find(&rows).Error
			})
			if err != nil {
				t.Fatal(err)
			}
			got := log.take()
			if len(got) != 1 || onReplica(got[0]) {
				t.Fatalf("a locking read in a transaction ran on %v", got)
			}
			if _, ok := got[0].(gorm.TxCommitter); !ok {
				t.Fatalf("a locking read in a transaction ran outside it, on %T", got[0])
			}

			// The checks still run with the resolver in front.
			strict, err := gorm.Open(postgres.New(postgres.Config{Conn: primary}), &gorm.Config{Logger: logger.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if err := strict.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{postgres.New(postgres.Config{Conn: replica})}})); err != nil {
				t.Fatal(err)
			}
			if err := strict.Use(lockplugin.New()); err != nil {
				t.Fatal(err)
			}
			err = strict.WithContext(ctx).Clauses(lockplugin.ForUpdate()).Find(&rows).Error
			if !errors.Is(err, lockplugin.ErrNotInTransaction) {
				t.Fatalf("want ErrNotInTransaction through the resolver, got %v", err)
			}
		})
	}
}
