package locks

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// i13Row is the model of the tests added for issue 13 (tables i13_*, so
// that they never meet another package's).
type i13Row struct {
	ID int64 `gorm:"primaryKey;autoIncrement:false"`
	N  int64 `gorm:"not null"`
}

func (i13Row) TableName() string { return "i13_rows" }

func resetI13Rows(t *testing.T, tg *testdb.Target) {
	t.Helper()
	tg.Reset(t, &i13Row{})
	if err := tg.DB.Create(&[]i13Row{{ID: 1}, {ID: 2}}).Error; err != nil {
		t.Fatalf("seeding i13_rows: %v", err)
	}
}

// TestRefusedRowAndRows: Row().Scan and Rows() of a refused locking query
// report the refusal instead of panicking (GORM's Row() used to hand back
// a nil *sql.Row): on SQLite, where every lock is refused, and outside a
// transaction on PostgreSQL. The refused query sends nothing.
func TestRefusedRowAndRows(t *testing.T) {
	for _, c := range []struct {
		kind string
		want error
	}{
		{testdb.SQLite, lockplugin.ErrUnsupported},
		{testdb.Postgres, lockplugin.ErrNotInTransaction},
	} {
		t.Run(c.kind, func(t *testing.T) {
			tg := testdb.Get(t, c.kind)
			resetI13Rows(t, tg)
			db := tg.DB.WithContext(t.Context())
			locks := map[string]clause.Expression{
				"ForUpdate":      lockplugin.ForUpdate(),
				"clause.Locking": clause.Locking{Strength: clause.LockingStrengthShare, Table: clause.Table{Name: clause.CurrentTable}},
			}
			for name, lock := range locks {
				t.Run(name, func(t *testing.T) {
					var n int64
					var row *sql.Row
					func() {
						defer func() {
							if p := recover(); p != nil {
								t.Fatalf("Row() panicked: %v", p)
							}
						}()
						row = db.Model(&i13Row{}).Clauses(lock).Select("n").Where("id = ?", 1).Row()
						if row == nil {
							t.Fatal("Row() returned a nil *sql.Row")
						}
						if err := row.Scan(&n); !errors.Is(err, c.want) {
							t.Fatalf("Row().Scan: want %v, got %v", c.want, err)
						}
					}()
					if err := row.Err(); !errors.Is(err, c.want) {
						t.Fatalf("Row().Err: want %v, got %v", c.want, err)
					}
					// Again through a model-less Table query.
					if err := db.Table("i13_rows").Clauses(lock).Select("n").Row().Scan(&n); !errors.Is(err, c.want) {
						t.Fatalf("Table(...).Row().Scan: want %v, got %v", c.want, err)
					}
					rows, err := db.Model(&i13Row{}).Clauses(lock).Rows()
					if rows != nil {
						_ = rows.Close()
						t.Fatal("Rows() returned rows for a refused lock")
					}
					if !errors.Is(err, c.want) {
						t.Fatalf("Rows(): want %v, got %v", c.want, err)
					}
					if strings.Contains(err.Error(), clause.CurrentTable) {
						t.Fatalf("GORM's placeholder leaked into %q", err)
					}
					t.Logf("%s: %v", name, err)
				})
			}
			// The same Row() inside a transaction (PostgreSQL) still works.
			if c.kind == testdb.Postgres {
				var n int64 = -1
				err := db.Transaction(func(tx *gorm.DB) error {
					return tx.Model(&i13Row{}).Clauses(lockplugin.ForUpdate()).Select("n").Where("id = ?", 1).Row().Scan(&n)
				})
				if err != nil || n != 0 {
					t.Fatalf("Row() in a transaction: n = %d, %v", n, err)
				}
			}
		})
	}
}

// TestRefusalTexts: every refusal names the lock as the user wrote it:
// GORM's internal "~~~ct~~~" never shows, and a share lock is never called
// FOR UPDATE.
func TestRefusalTexts(t *testing.T) {
	shareOfCurrent := clause.Locking{Strength: clause.LockingStrengthShare, Table: clause.Table{Name: clause.CurrentTable}}
	cases := []struct {
		kind string
		inTx bool
		lock clause.Expression
		want error
		text string
	}{
		{"postgres", false, shareOfCurrent, lockplugin.ErrNotInTransaction, "FOR SHARE OF lk_jobs would hold its locks only while the statement runs"},
		{"postgres", false, lockplugin.ForShare(lockplugin.Of(clause.CurrentTable), lockplugin.NoWait), lockplugin.ErrNotInTransaction, "FOR SHARE OF lk_jobs NOWAIT would hold"},
		{"mariadb", true, lockplugin.ForShare(lockplugin.Of("lk_companies")), lockplugin.ErrUnsupported, "FOR SHARE OF lk_companies is not supported on MariaDB 10.11.6"},
		{"mariadb", true, clause.Locking{Strength: clause.LockingStrengthShare, Table: clause.Table{Name: "lk_companies"}}, lockplugin.ErrUnsupported, "FOR SHARE OF lk_companies is not supported on MariaDB"},
		{"postgres", true, lockplugin.ForShare(lockplugin.Of(clause.CurrentTable)), lockplugin.ErrInvalidLock, "FOR SHARE OF lk_jobs on Raw or Exec SQL"},
	}
	for _, c := range cases {
		t.Run(c.kind+"/"+c.text, func(t *testing.T) {
			db, _ := fakeDB(t, c.kind)
			run := func(tx *gorm.DB) error {
				var jobs []lkJob
				q := tx.Model(&lkJob{}).Clauses(c.lock)
				if c.want == lockplugin.ErrInvalidLock {
					return q.Exec("UPDATE lk_jobs SET state = 'x'").Error
				}
				return q.Find(&jobs).Error
			}
			var err error
			if c.inTx {
				err = db.Transaction(run)
			} else {
				err = run(db)
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("want %v containing %q, got %v", c.want, c.text, err)
			}
			if strings.Contains(err.Error(), clause.CurrentTable) || (strings.Contains(c.text, "SHARE") && strings.Contains(err.Error(), "FOR UPDATE")) {
				t.Fatalf("the message does not name the lock as written: %v", err)
			}
		})
	}
}

// TestMariaDBShareOfCurrentTable: GORM's documented
// clause.Locking{Strength: "SHARE", Table: clause.Table{Name:
// clause.CurrentTable}} runs on MariaDB inside a transaction (OF naming the
// query's only table is sent without OF) and really locks: another
// transaction's FOR UPDATE NOWAIT on the row gets ErrLockNotAvailable,
// while its FOR SHARE NOWAIT is admitted.
func TestMariaDBShareOfCurrentTable(t *testing.T) {
	tg := testdb.Get(t, testdb.MySQL)
	if !tg.Is(dialects.MariaDB) && tg.Dialect.Supports(dialects.LockOf) {
		t.Skipf("%s supports OF itself; the rule under test is for MariaDB", tg.Dialect)
	}
	resetI13Rows(t, tg)
	ctx := liveContext(t)
	tx1 := begin(t, ctx, tg.DB)
	var r i13Row
	shareOf := clause.Locking{Strength: clause.LockingStrengthShare, Table: clause.Table{Name: clause.CurrentTable}}
	if err := tx1.Clauses(shareOf).First(&r, 1).Error; err != nil {
		t.Fatalf("SHARE OF the current table in a transaction: %v", err)
	}
	err := tg.DB.WithContext(ctx).Transaction(func(tx2 *gorm.DB) error {
		return tx2.Clauses(lockplugin.ForUpdate(lockplugin.NoWait)).First(&r, 1).Error
	})
	if !errors.Is(err, lockplugin.ErrLockNotAvailable) {
		t.Fatalf("another transaction's FOR UPDATE NOWAIT: want ErrLockNotAvailable, got %v", err)
	}
	t.Logf("FOR UPDATE NOWAIT against the share lock: %v", err)
	err = tg.DB.WithContext(ctx).Transaction(func(tx2 *gorm.DB) error {
		var r2 i13Row
		return tx2.Clauses(lockplugin.ForShare(lockplugin.Of("i13_rows"), lockplugin.NoWait)).First(&r2, 1).Error
	})
	if err != nil {
		t.Fatalf("another FOR SHARE OF i13_rows NOWAIT must be admitted: %v", err)
	}
	// Row 2 is not locked: the lock is a row lock, not a table lock.
	err = tg.DB.WithContext(ctx).Transaction(func(tx2 *gorm.DB) error {
		var r2 i13Row
		return tx2.Clauses(lockplugin.ForUpdate(lockplugin.NoWait)).First(&r2, 2).Error
	})
	if err != nil {
		t.Fatalf("FOR UPDATE NOWAIT of another row: %v", err)
	}
}

// TestRefusedSubquery: GORM builds a subquery in DryRun mode and ignores
// its error. A lock refused there must not vanish: the outer query fails
// with the refusal, and on SQLite (which reads an empty subquery as an
// empty IN list) it does not quietly return nothing.
func TestRefusedSubquery(t *testing.T) {
	for _, c := range []struct {
		kind string
		lock clause.Expression
		want error
	}{
		{testdb.SQLite, lockplugin.ForUpdate(), lockplugin.ErrUnsupported},
		{testdb.Postgres, lockplugin.ForUpdate(lockplugin.NoWait, lockplugin.SkipLocked), lockplugin.ErrInvalidLock},
	} {
		t.Run(c.kind, func(t *testing.T) {
			tg := testdb.Get(t, c.kind)
			resetI13Rows(t, tg)
			// Each in its own transaction: on PostgreSQL the marker fails
			// at parse time, which aborts the transaction.
			_ = tg.DB.WithContext(t.Context()).Transaction(func(tx *gorm.DB) error {
				var rows []i13Row
				sub := tx.Model(&i13Row{}).Clauses(c.lock).Select("id")
				err := tx.Where("id IN (?)", sub).Find(&rows).Error
				if len(rows) != 0 {
					t.Errorf("%d rows came back", len(rows))
				}
				if !errors.Is(err, c.want) {
					t.Errorf("Find: want %v, got %v", c.want, err)
				}
				return err
			})
			_ = tg.DB.WithContext(t.Context()).Transaction(func(tx *gorm.DB) error {
				sub := tx.Model(&i13Row{}).Clauses(c.lock).Select("id")
				err := tx.Where("id IN (?)", sub).Delete(&i13Row{}).Error
				if !errors.Is(err, c.want) {
					t.Errorf("Delete: want %v, got %v", c.want, err)
				}
				t.Logf("%v", err)
				return err
			})
			var n int64
			if err := tg.DB.Model(&i13Row{}).Count(&n).Error; err != nil || n != 2 {
				t.Fatalf("rows left: %d, %v; want 2", n, err)
			}
		})
	}
}
