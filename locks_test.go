package lockplugin_test

import (
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

// lkTask is the row-lock tests' model.
type lkTask struct {
	ID    uint
	State string
}

func (lkTask) TableName() string { return "tasks" }

func lkOpen(t *testing.T, name, version string) *gorm.DB {
	t.Helper()
	db, err := dryrun.Open(name, version)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Use(lockplugin.New()); err != nil {
		t.Fatal(err)
	}
	return db
}

func lkSQL(db *gorm.DB, lock clause.Expression) (string, error) {
	var tasks []lkTask
	tx := db.Clauses(lock).Where("state = ?", "queued").Find(&tasks)
	return tx.Statement.SQL.String(), tx.Error
}

func TestLocksRenderPerDialect(t *testing.T) {
	type db struct{ name, version string }
	pg, my8, my57, maria, ms, ora, lite := db{"postgres", ""}, db{"mysql", "8.0.36"}, db{"mysql", "5.7.44"},
		db{"mysql", "10.11.6-MariaDB"}, db{"sqlserver", ""}, db{"oracle", ""}, db{"sqlite", ""}
	cases := []struct {
		db   db
		lock clause.Expression
		want string // SQL, or "!" and a piece of the ErrUnsupported message
	}{
		{pg, lockplugin.ForUpdate(), `SELECT * FROM "tasks" WHERE state = $1 FOR UPDATE`},
		{pg, lockplugin.ForShare(lockplugin.NoWait), `SELECT * FROM "tasks" WHERE state = $1 FOR SHARE NOWAIT`},
		{pg, lockplugin.ForNoKeyUpdate(lockplugin.SkipLocked), `SELECT * FROM "tasks" WHERE state = $1 FOR NO KEY UPDATE SKIP LOCKED`},
		{pg, lockplugin.ForKeyShare(lockplugin.Of("tasks")), `SELECT * FROM "tasks" WHERE state = $1 FOR KEY SHARE OF "tasks"`},
		{my8, lockplugin.ForShare(lockplugin.SkipLocked), "SELECT * FROM `tasks` WHERE state = ? FOR SHARE SKIP LOCKED"},
		{my8, lockplugin.ForUpdate(lockplugin.Of("tasks"), lockplugin.NoWait), "SELECT * FROM `tasks` WHERE state = ? FOR UPDATE OF `tasks` NOWAIT"},
		{my57, lockplugin.ForShare(), "SELECT * FROM `tasks` WHERE state = ? LOCK IN SHARE MODE"},
		{my57, lockplugin.ForUpdate(lockplugin.SkipLocked), "!SKIP LOCKED is not supported on MySQL 5.7.44 (needs MySQL 8.0.1 or later)"},
		{maria, lockplugin.ForShare(lockplugin.SkipLocked), "SELECT * FROM `tasks` WHERE state = ? LOCK IN SHARE MODE SKIP LOCKED"},
		{maria, lockplugin.ForNoKeyUpdate(), "!FOR NO KEY UPDATE is not supported on MariaDB 10.11.6"},
		{ms, lockplugin.ForUpdate(), "SELECT * FROM [tasks] WITH (XLOCK, ROWLOCK) WHERE state = @p1"},
		{ms, lockplugin.ForShare(lockplugin.NoWait), "SELECT * FROM [tasks] WITH (REPEATABLEREAD, ROWLOCK, NOWAIT) WHERE state = @p1"},
		{ms, lockplugin.ForUpdate(lockplugin.SkipLocked), "SELECT * FROM [tasks] WITH (XLOCK, ROWLOCK, READPAST) WHERE state = @p1"},
		{ora, lockplugin.ForUpdate(lockplugin.SkipLocked), `SELECT * FROM "tasks" WHERE state = :1 FOR UPDATE SKIP LOCKED`},
		{ora, lockplugin.ForShare(), "!FOR SHARE is not supported on Oracle"},
		{lite, lockplugin.ForUpdate(), "!FOR UPDATE is not supported on SQLite"},
		{lite, clause.Locking{Strength: "UPDATE"}, "!FOR UPDATE is not supported on SQLite"},
		{db{"clickhouse", ""}, lockplugin.ForUpdate(), `!FOR UPDATE is not supported on unknown dialect "clickhouse"`},
	}
	for _, c := range cases {
		t.Run(c.db.name+c.db.version+"/"+c.want, func(t *testing.T) {
			got, err := lkSQL(lkOpen(t, c.db.name, c.db.version), c.lock)
			if msg, ok := strings.CutPrefix(c.want, "!"); ok {
				var ue *lockplugin.UnsupportedError
				if !errors.Is(err, lockplugin.ErrUnsupported) || !errors.As(err, &ue) || !strings.Contains(err.Error(), msg) {
					t.Fatalf("want ErrUnsupported containing %q, got %v (SQL %q)", msg, err, got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v\nwant %q", got, err, c.want)
			}
		})
	}
}

func TestLocksErrors(t *testing.T) {
	pg := lkOpen(t, "postgres", "")
	for _, c := range []struct {
		name string
		lock clause.Expression
		want string
	}{
		{"NoWait with SkipLocked", lockplugin.ForUpdate(lockplugin.NoWait, lockplugin.SkipLocked), "NOWAIT and SKIP LOCKED cannot be combined"},
		{"Of without tables", lockplugin.ForUpdate(lockplugin.Of()), "Of needs at least one table name"},
		{"Of empty", lockplugin.ForUpdate(lockplugin.Of("tasks", "")), "empty table name"},
		{"Of qualified", lockplugin.ForUpdate(lockplugin.Of("public.tasks")), "is qualified"},
		{"unknown WaitPolicy", lockplugin.ForUpdate(lockplugin.WaitPolicy(9)), "unknown wait policy 9"},
		{"GORM locking options", clause.Locking{Strength: "UPDATE", Options: "WAIT 5"}, `clause.Locking options "WAIT 5"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := lkSQL(pg, c.lock)
			if !errors.Is(err, lockplugin.ErrInvalidLock) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want ErrInvalidLock containing %q, got %v (SQL %q)", c.want, err, got)
			}
			// A refused DryRun statement carries a marker that fails any
			// query embedding it as a subquery (issue 13).
			if got != "lockplugin_refused_lock()" {
				t.Fatalf("SQL was built: %q", got)
			}
		})
	}

	t.Run("Raw", func(t *testing.T) {
		var tasks []lkTask
		err := pg.Clauses(lockplugin.ForUpdate()).Raw("SELECT * FROM tasks").Scan(&tasks).Error
		if !errors.Is(err, lockplugin.ErrInvalidLock) {
			t.Fatalf("want ErrInvalidLock, got %v", err)
		}
	})

	t.Run("NoLock", func(t *testing.T) {
		got, err := lkSQL(pg.Clauses(lockplugin.ForUpdate()), lockplugin.NoLock())
		if err != nil || got != `SELECT * FROM "tasks" WHERE state = $1` {
			t.Fatalf("got %q, %v", got, err)
		}
	})

	t.Run("Oracle row limit", func(t *testing.T) {
		var task lkTask
		err := lkOpen(t, "oracle", "").Clauses(lockplugin.ForUpdate()).First(&task).Error
		if !errors.Is(err, lockplugin.ErrUnsupported) || !strings.Contains(err.Error(), "ORA-02014") {
			t.Fatalf("want ErrUnsupported naming ORA-02014, got %v", err)
		}
	})

	t.Run("outside a transaction", func(t *testing.T) {
		// Not DryRun, and no connection: the check must refuse before
		// GORM reaches for one.
		db, err := gorm.Open(&dryrun.Dialector{DialectorName: "postgres"}, &gorm.Config{DisableAutomaticPing: true, Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Use(lockplugin.New()); err != nil {
			t.Fatal(err)
		}
		_, err = lkSQL(db, lockplugin.ForUpdate())
		if !errors.Is(err, lockplugin.ErrNotInTransaction) {
			t.Fatalf("want ErrNotInTransaction, got %v", err)
		}
		if !strings.Contains(err.Error(), "FOR UPDATE") {
			t.Fatalf("the error should name the lock: %v", err)
		}
	})

	t.Run("plugin not registered", func(t *testing.T) {
		db, err := dryrun.Open("postgres", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lkSQL(db, lockplugin.ForUpdate()); !errors.Is(err, lockplugin.ErrNotRegistered) {
			t.Fatalf("want ErrNotRegistered, got %v", err)
		}
	})
}

// TestLocksReusedQuery: a query built once keeps its lock across runs,
// and NoLock takes it off for good.
func TestLocksReusedQuery(t *testing.T) {
	db := lkOpen(t, "sqlserver", "")
	for _, lock := range []clause.Expression{lockplugin.ForUpdate(), clause.Locking{Strength: "UPDATE"}} {
		q := db.Clauses(lock).Where("state = ?", "queued").Session(&gorm.Session{})
		for i := 0; i < 2; i++ {
			var tasks []lkTask
			tx := q.Find(&tasks)
			if want := "SELECT * FROM [tasks] WITH (XLOCK, ROWLOCK) WHERE state = @p1"; tx.Error != nil || tx.Statement.SQL.String() != want {
				t.Fatalf("run %d: got %q, %v; want %q", i, tx.Statement.SQL.String(), tx.Error, want)
			}
		}
		var tasks []lkTask
		tx := q.Clauses(lockplugin.NoLock()).Find(&tasks)
		if want := "SELECT * FROM [tasks] WHERE state = @p1"; tx.Error != nil || tx.Statement.SQL.String() != want {
			t.Fatalf("NoLock: got %q, %v; want %q", tx.Statement.SQL.String(), tx.Error, want)
		}
	}
}

func TestWaitPolicyString(t *testing.T) {
	for w, want := range map[lockplugin.WaitPolicy]string{
		lockplugin.NoWait: "NOWAIT", lockplugin.SkipLocked: "SKIP LOCKED", 0: "WaitPolicy(0)",
	} {
		if got := w.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(w), got, want)
		}
	}
}
