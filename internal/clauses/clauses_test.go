package clauses_test

import (
	"errors"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/internal/clauses"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

type item struct {
	ID   uint
	Name string
}

func open(t *testing.T, name string) *gorm.DB {
	t.Helper()
	db, err := dryrun.Open(name, "")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func render(db *gorm.DB, lock clause.Expression) (string, error) {
	var items []item
	tx := db.Clauses(lock).Find(&items)
	return tx.Statement.SQL.String(), tx.Error
}

// dialectorLikeFOR is what dialectors install for "FOR": handle
// clause.Locking their way, hand anything else to Clause.Build.
func dialectorLikeFOR(c clause.Clause, b clause.Builder) {
	if _, ok := c.Expression.(clause.Locking); ok {
		return // dropped, as the SQLite dialectors do
	}
	c.Build(b)
}

// TestBuildersWinWhateverTheOrder: lockplugin's rendering holds whether the
// dialector's "FOR" and "FROM" builders were installed before the plugin
// (wrapped) or after it (the clause's own Builder takes over).
func TestBuildersWinWhateverTheOrder(t *testing.T) {
	t.Run("dialector builder first", func(t *testing.T) {
		db := open(t, "postgres")
		db.ClauseBuilders["FOR"] = dialectorLikeFOR
		if err := db.Use(lockplugin.New()); err != nil {
			t.Fatal(err)
		}
		got, err := render(db, clauses.ForUpdate())
		if want := `SELECT * FROM "items" FOR UPDATE`; err != nil || got != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
		// GORM's clause.Locking is rendered by lockplugin too, not dropped.
		got, err = render(db, clause.Locking{Strength: "SHARE"})
		if want := `SELECT * FROM "items" FOR SHARE`; err != nil || got != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	})
	t.Run("dialector builder after", func(t *testing.T) {
		db := open(t, "postgres")
		if err := db.Use(lockplugin.New()); err != nil {
			t.Fatal(err)
		}
		db.ClauseBuilders["FOR"] = dialectorLikeFOR
		got, err := render(db, clauses.ForUpdate(clauses.NoWait))
		if want := `SELECT * FROM "items" FOR UPDATE NOWAIT`; err != nil || got != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	})
	t.Run("SQL Server FROM builder after", func(t *testing.T) {
		db := open(t, "sqlserver")
		if err := db.Use(lockplugin.New()); err != nil {
			t.Fatal(err)
		}
		db.ClauseBuilders["FROM"] = func(c clause.Clause, b clause.Builder) { c.Build(b) }
		db.ClauseBuilders["FOR"] = dialectorLikeFOR
		got, err := render(db, clauses.ForUpdate())
		if want := "SELECT * FROM [items] WITH (XLOCK, ROWLOCK)"; err != nil || got != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	})
	t.Run("SQL Server FROM builder that drops the hints", func(t *testing.T) {
		db := open(t, "sqlserver")
		if err := db.Use(lockplugin.New()); err != nil {
			t.Fatal(err)
		}
		db.ClauseBuilders["FROM"] = func(c clause.Clause, b clause.Builder) {
			c.Builder = nil
			c.Build(b)
		}
		_, err := render(db, clauses.ForUpdate())
		if !errors.Is(err, clauses.ErrInvalidLock) {
			t.Fatalf("a query whose hints were not written must fail, got %v", err)
		}
	})
}

func TestRegister(t *testing.T) {
	if err := clauses.Register(nil, clauses.Config{}); err == nil {
		t.Fatal("Register(nil) must fail")
	}
	// Registered without the root plugin (as a tool might): the checks are
	// there, but the lock refuses to render without the plugin's name in
	// db.Plugins, where GORM records a registration.
	db := open(t, "postgres")
	if err := clauses.Register(db, clauses.Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := render(db, clauses.ForUpdate()); !errors.Is(err, lockplugin.ErrNotRegistered) {
		t.Fatalf("want ErrNotRegistered, got %v", err)
	}
}
