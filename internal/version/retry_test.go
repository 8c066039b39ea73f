package version_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/internal/dryrun"
	"github.com/lockplugin/lockplugin/internal/version"
)

// fakePool stands in for a database connection pool: it begins, commits
// and rolls back transactions and counts them, and sends nothing.
type fakePool struct{ begins, commits, rollbacks int }

func (p *fakePool) PrepareContext(context.Context, string) (*sql.Stmt, error) {
	return nil, errors.New("fakePool: no SQL")
}
func (p *fakePool) ExecContext(context.Context, string, ...interface{}) (sql.Result, error) {
	return nil, errors.New("fakePool: no SQL")
}
func (p *fakePool) QueryContext(context.Context, string, ...interface{}) (*sql.Rows, error) {
	return nil, errors.New("fakePool: no SQL")
}
func (p *fakePool) QueryRowContext(context.Context, string, ...interface{}) *sql.Row { return nil }
func (p *fakePool) BeginTx(context.Context, *sql.TxOptions) (gorm.ConnPool, error) {
	p.begins++
	return &fakeTx{p}, nil
}

type fakeTx struct{ *fakePool }

func (t *fakeTx) Commit() error   { t.commits++; return nil }
func (t *fakeTx) Rollback() error { t.rollbacks++; return nil }

func withPool(t *testing.T) (*gorm.DB, *fakePool) {
	t.Helper()
	db, err := dryrun.Open("postgres", "")
	if err != nil {
		t.Fatal(err)
	}
	p := &fakePool{}
	db.ConnPool, db.Statement.ConnPool = p, p
	return db, p
}

// pgError looks like a PostgreSQL driver error with a SQLSTATE.
type pgError struct{ state string }

func (e *pgError) Error() string    { return "pg error " + e.state }
func (e *pgError) SQLState() string { return e.state }

func TestRetryOnConflict(t *testing.T) {
	ctx := context.Background()
	stale := &version.ConcurrencyError{Op: "update", Table: "t", Version: 1, Current: 2}
	boom := errors.New("boom")

	t.Run("retries conflicts until it succeeds", func(t *testing.T) {
		db, p := withPool(t)
		runs := 0
		err := version.RetryOnConflict(ctx, db, 5, func(*gorm.DB) error {
			runs++
			if runs < 3 {
				return stale
			}
			return nil
		})
		if err != nil || runs != 3 {
			t.Fatalf("err %v after %d runs", err, runs)
		}
		if p.begins != 3 || p.commits != 1 || p.rollbacks != 2 {
			t.Errorf("begins %d commits %d rollbacks %d: each run is its own transaction", p.begins, p.commits, p.rollbacks)
		}
	})

	t.Run("retries transient database errors", func(t *testing.T) {
		db, _ := withPool(t)
		runs := 0
		err := version.RetryOnConflict(ctx, db, 5, func(*gorm.DB) error {
			runs++
			if runs == 1 {
				return &pgError{"40001"} // serialization failure
			}
			return nil
		})
		if err != nil || runs != 2 {
			t.Fatalf("err %v after %d runs", err, runs)
		}
	})

	t.Run("gives up after attempts", func(t *testing.T) {
		db, _ := withPool(t)
		runs := 0
		err := version.RetryOnConflict(ctx, db, 4, func(*gorm.DB) error { runs++; return stale })
		if !errors.Is(err, version.ErrConcurrency) || runs != 4 {
			t.Fatalf("err %v after %d runs", err, runs)
		}
		var ce *version.ConcurrencyError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "gave up after 4 attempts") {
			t.Errorf("err %v", err)
		}
	})

	t.Run("other errors return at once", func(t *testing.T) {
		db, _ := withPool(t)
		runs := 0
		err := version.RetryOnConflict(ctx, db, 4, func(*gorm.DB) error { runs++; return boom })
		if err != boom || runs != 1 {
			t.Fatalf("err %v after %d runs", err, runs)
		}
		err = version.RetryOnConflict(ctx, db, 4, func(*gorm.DB) error { runs++; return &pgError{"23505"} })
		if runs != 2 || err == nil {
			t.Fatalf("unique violation was retried: err %v, runs %d", err, runs)
		}
	})

	t.Run("context ends the retries", func(t *testing.T) {
		db, _ := withPool(t)
		cctx, cancel := context.WithCancel(ctx)
		runs := 0
		err := version.RetryOnConflict(cctx, db, 100, func(*gorm.DB) error {
			runs++
			cancel()
			return stale
		})
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "concurrent modification") || runs != 1 {
			t.Fatalf("err %v after %d runs", err, runs)
		}
		if err := version.RetryOnConflict(cctx, db, 3, func(*gorm.DB) error { t.Error("ran"); return nil }); !errors.Is(err, context.Canceled) {
			t.Errorf("canceled context: %v", err)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		db, p := withPool(t)
		ok := func(*gorm.DB) error { return nil }
		for name, err := range map[string]error{
			"nil db": version.RetryOnConflict(ctx, nil, 1, ok),
			"nil fn": version.RetryOnConflict(ctx, db, 1, nil),
			"zero":   version.RetryOnConflict(ctx, db, 0, ok),
			//lint:ignore SA1012 the nil context is the point
			"nil context": version.RetryOnConflict(nil, db, 1, ok),
			"negative":    version.RetryOnConflict(ctx, db, -1, ok),
			"in a tx":     db.Transaction(func(tx *gorm.DB) error { return version.RetryOnConflict(ctx, tx, 1, ok) }),
		} {
			if err == nil || !strings.HasPrefix(err.Error(), "lockplugin: RetryOnConflict") {
				t.Errorf("%s: got %v", name, err)
			}
		}
		if p.begins != 1 {
			t.Errorf("%d transactions begun; only the test's own should have been", p.begins)
		}
	})
}
