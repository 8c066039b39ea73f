package version_test

// Issue 22: adopting lockplugin.Version on a table that already has rows.
// The table is made and filled by SQL without the column, as a team's
// existing table is; the column then arrives either through AutoMigrate
// (as a user adds it) or by hand as a nullable column with no default (as
// an older lockplugin's AutoMigrate added it), which leaves every existing
// row NULL.

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AdoptOrder is the model after the team adds the version.
type AdoptOrder struct {
	ID     uint
	Total  int
	Status string
	lockplugin.Version
}

func (AdoptOrder) TableName() string { return "i22_orders" }

const adoptRows = 20

// lived makes i22_orders by SQL, without a version column, and fills it
// with adoptRows orders (ids 1..adoptRows, total 100, status "new"); then
// adds the column: by AutoMigrate (byMigrate) or as a nullable column
// without a default, which leaves the rows NULL.
func lived(t *testing.T, tg *testdb.Target, byMigrate bool) {
	t.Helper()
	db := tg.Plain.WithContext(ctxOf(t))
	if db.Migrator().HasTable("i22_orders") {
		require.NoError(t, db.Migrator().DropTable("i22_orders"))
	}
	// NULL versions left on the shared server would show in every
	// `lockcheck doctor` run against it.
	t.Cleanup(func() { _ = tg.Plain.Migrator().DropTable("i22_orders") })
	require.NoError(t, db.Exec("CREATE TABLE i22_orders (id BIGINT PRIMARY KEY, total BIGINT NOT NULL, status VARCHAR(32) NOT NULL)").Error)
	vals := make([]string, adoptRows)
	for i := range vals {
		vals[i] = fmt.Sprintf("(%d, 100, 'new')", i+1)
	}
	require.NoError(t, db.Exec("INSERT INTO i22_orders (id, total, status) VALUES "+strings.Join(vals, ", ")).Error)
	if byMigrate {
		require.NoError(t, tg.DB.WithContext(ctxOf(t)).AutoMigrate(&AdoptOrder{}))
	} else {
		require.NoError(t, db.Exec("ALTER TABLE i22_orders ADD "+column(tg)+" BIGINT").Error)
	}
	if tg.Name == "postgres" {
		// pgx caches the statements a connection prepared; one prepared
		// on the table before it was dropped and made again with another
		// shape fails once ("cached plan must not change result type"),
		// as it would in an application that runs while its table is
		// altered. Close the idle connections, and their caches.
		for _, g := range []*gorm.DB{tg.DB, tg.Plain} {
			sqlDB, err := g.DB()
			require.NoError(t, err)
			sqlDB.SetMaxIdleConns(0)
			sqlDB.SetMaxIdleConns(32)
		}
	}
}

// column is the ADD clause's column: SQL Server has no COLUMN keyword.
func column(tg *testdb.Target) string {
	if tg.Name == "sqlserver" {
		return "version"
	}
	return "COLUMN version"
}

// nulls counts the rows whose version is NULL.
func nulls(t *testing.T, tg *testdb.Target) int64 {
	t.Helper()
	var n int64
	require.NoError(t, tg.Plain.WithContext(ctxOf(t)).Table("i22_orders").Where("version IS NULL").Count(&n).Error)
	return n
}

// AutoMigrate as a user runs it: the column has DEFAULT 1, and the
// rows that were there start at version 1.
func TestAdoptByAutoMigrate(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		lived(t, tg, true)
		db := tg.DB.WithContext(ctxOf(t))
		assert.Zero(t, nulls(t, tg), "no row is left NULL")
		var o AdoptOrder
		require.NoError(t, db.First(&o, 1).Error)
		assert.EqualValues(t, 1, o.Version)
		// A second AutoMigrate leaves the column as it is.
		require.NoError(t, db.AutoMigrate(&AdoptOrder{}))

		// Two stale saves of a pre-existing row.
		staleSaves(t, tg, 2, 1)

		// StrictVersion: a struct without its version is refused with
		// ErrZeroVersion, never a conflict.
		strict := openWith(t, tg, lockplugin.StrictVersion())
		err := strict.Save(&AdoptOrder{ID: 3, Total: 1, Status: "form"}).Error
		require.ErrorIs(t, err, lockplugin.ErrZeroVersion)
		assert.False(t, errors.Is(err, lockplugin.ErrConcurrency))
		var got AdoptOrder
		require.NoError(t, strict.First(&got, 3).Error)
		got.Status = "strict"
		require.NoError(t, strict.Save(&got).Error, "a read row is written under StrictVersion")
		assert.EqualValues(t, 2, got.Version)
	})
}

// staleSaves: A and B read order id; A adds 100 to the total, B changes the
// status; B's save must fail with ErrConcurrency and A's change survive.
func staleSaves(t *testing.T, tg *testdb.Target, id uint, readAt lockplugin.Version) {
	t.Helper()
	db := tg.DB.WithContext(ctxOf(t))
	var a, b AdoptOrder
	require.NoError(t, db.First(&a, id).Error)
	require.NoError(t, db.First(&b, id).Error)
	require.EqualValues(t, readAt, a.Version)
	a.Total += 100
	require.NoError(t, db.Save(&a).Error)
	assert.EqualValues(t, 1+max(readAt, 0), a.Version, "the struct carries the row's new version")
	b.Status = "shipped"
	err := db.Save(&b).Error
	requireConflict(t, err, &b, "update", readAt, a.Version, false)
	var row AdoptOrder
	require.NoError(t, db.First(&row, id).Error)
	assert.EqualValues(t, 200, row.Total, "A's change survived")
	assert.EqualValues(t, "new", row.Status, "B wrote nothing")
	assert.EqualValues(t, a.Version, row.Version)
}

// The column an older lockplugin added (nullable, no default): every
// existing row is NULL. The old behaviour, a NULL read as version 0 and
// written unguarded, loses A's change; read now, the NULL guards the write.
func TestAdoptNullColumn(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		lived(t, tg, false)
		db := tg.DB.WithContext(ctxOf(t))
		require.EqualValues(t, adoptRows, nulls(t, tg))

		t.Run("baseline: NULL read as 0 loses A's change", func(t *testing.T) {
			var a, b AdoptOrder
			require.NoError(t, db.First(&a, 1).Error)
			require.NoError(t, db.First(&b, 1).Error)
			a.Version, b.Version = 0, 0 // what the scan made of NULL before
			a.Total += 100
			b.Status = "shipped"
			require.NoError(t, db.Save(&a).Error)
			require.NoError(t, db.Save(&b).Error, "unguarded: both saves succeed")
			var row AdoptOrder
			require.NoError(t, db.First(&row, 1).Error)
			assert.EqualValues(t, 100, row.Total, "A's change was lost")
			assert.EqualValues(t, 2, row.Version, "the unguarded writes still left a real version")
		})

		t.Run("a NULL row read and saved is guarded", func(t *testing.T) {
			var o AdoptOrder
			require.NoError(t, db.First(&o, 2).Error)
			assert.Equal(t, lockplugin.NullVersion, o.Version, "NULL scans as NullVersion, not 0")
			staleSaves(t, tg, 2, lockplugin.NullVersion)
			var ce *lockplugin.ConcurrencyError
			var b AdoptOrder
			require.NoError(t, db.First(&b, 3).Error)
			require.NoError(t, db.Exec("UPDATE i22_orders SET version = 7 WHERE id = 3").Error)
			err := db.Delete(&b).Error
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, err.Error(), "read at version NULL; the row is now at version 7")
		})

		t.Run("every write leaves a real version", func(t *testing.T) {
			writes := map[uint]func(o *AdoptOrder) error{
				4: func(o *AdoptOrder) error { return db.Save(o).Error },
				5: func(o *AdoptOrder) error { return db.Model(o).Update("status", "u").Error },
				6: func(o *AdoptOrder) error { return db.Model(o).Updates(map[string]any{"total": 1}).Error },
				7: func(o *AdoptOrder) error {
					return db.Model(&AdoptOrder{}).Where("id = ?", o.ID).Update("status", "by condition").Error
				},
				8: func(o *AdoptOrder) error {
					return db.Table("i22_orders").Where("id = ?", o.ID).Update("status", "table").Error
				},
				9: func(o *AdoptOrder) error {
					return db.Model(&AdoptOrder{ID: o.ID}).Updates(map[string]any{"status": "supplied", "version": lockplugin.NullVersion}).Error
				},
			}
			for id, write := range writes {
				var o AdoptOrder
				require.NoError(t, db.First(&o, id).Error)
				require.NoError(t, write(&o), "order %d", id)
				var row AdoptOrder
				require.NoError(t, db.First(&row, id).Error)
				assert.EqualValues(t, 1, row.Version, "order %d: NULL became 1", id)
			}
			// A slice Save of rows read at NULL: each guarded, each at 1.
			var os []AdoptOrder
			require.NoError(t, db.Where("id IN ?", []uint{10, 11}).Order("id").Find(&os).Error)
			for i := range os {
				os[i].Status = "slice"
			}
			require.NoError(t, db.Save(&os).Error)
			for _, o := range os {
				assert.EqualValues(t, 1, o.Version)
				assert.EqualValues(t, 1, load[AdoptOrder](t, db, o.ID).Version)
			}
		})

		t.Run("StrictVersion: first save succeeds or is ErrZeroVersion, never a conflict", func(t *testing.T) {
			strict := openWith(t, tg, lockplugin.StrictVersion())
			for _, w := range []struct {
				id    uint
				write func() error
			}{
				{12, func() error { return strict.Save(&AdoptOrder{ID: 12, Total: 1, Status: "form"}).Error }},
				{13, func() error { return strict.Model(&AdoptOrder{ID: 13}).Update("status", "form").Error }},
				{14, func() error { return strict.Delete(&AdoptOrder{ID: 14}).Error }},
			} {
				err := w.write()
				require.ErrorIs(t, err, lockplugin.ErrZeroVersion, "order %d", w.id)
				assert.False(t, errors.Is(err, lockplugin.ErrConcurrency), "never a conflict")
				assert.Contains(t, err.Error(), "NULL version")
				assert.Contains(t, err.Error(), "SET ")
				assert.Contains(t, err.Error(), "= 1 WHERE ")
				row := load[AdoptOrder](t, db, w.id)
				assert.EqualValues(t, "new", row.Status, "nothing written")
			}
			var o AdoptOrder
			require.NoError(t, strict.First(&o, 15).Error)
			o.Status = "strict"
			require.NoError(t, strict.Save(&o).Error, "a row read at NULL is written, guarded")
			assert.EqualValues(t, 1, load[AdoptOrder](t, db, 15).Version)
		})

		n := nulls(t, tg)
		t.Logf("%s: %d of %d pre-existing rows still NULL (untouched ones)", tg.Name, n, adoptRows)
		// The upgrade: AutoMigrate of this lockplugin over a column an
		// older one added, NULL rows and all, goes through (it adds the
		// default and leaves the column nullable) and changes no row; the
		// NULL rows stay guarded until the backfill.
		require.NoError(t, db.AutoMigrate(&AdoptOrder{}), "AutoMigrate over %d NULL rows", n)
		assert.EqualValues(t, n, nulls(t, tg))
		require.NoError(t, db.Exec("UPDATE i22_orders SET version = 1 WHERE version IS NULL").Error, "the backfill")
		assert.Zero(t, nulls(t, tg))
		require.NoError(t, db.AutoMigrate(&AdoptOrder{}))
	})
}

// Real goroutines: for each pre-existing NULL row, two goroutines read it,
// wait for each other, then write (one adds to the total, one changes the
// status). With the old reading (NULL as 0) one change per row is lost;
// read as NullVersion, exactly one write per row is refused with
// ErrConcurrency and none is lost, and with RetryOnConflict both land.
func TestAdoptNullConcurrent(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		run := func(old, retry bool) (lost, conflicts int) {
			lived(t, tg, false)
			db := tg.DB.WithContext(ctxOf(t))
			var mu sync.Mutex
			for id := uint(1); id <= adoptRows; id++ {
				var read sync.WaitGroup
				read.Add(2)
				errs, _ := scenario.Race(2, func(w int) error {
					write := func(tx *gorm.DB, first bool) error {
						var o AdoptOrder
						if err := tx.First(&o, id).Error; err != nil {
							return err
						}
						if first {
							read.Done()
							read.Wait() // both hold the row before either writes
						}
						if old {
							o.Version = 0
						}
						if w == 0 {
							o.Total += 100
						} else {
							o.Status = "shipped"
						}
						return tx.Save(&o).Error
					}
					err := write(db, true)
					if errors.Is(err, lockplugin.ErrConcurrency) {
						mu.Lock()
						conflicts++
						mu.Unlock()
						if retry {
							return lockplugin.RetryOnConflict(ctxOf(t), db, 5, func(tx *gorm.DB) error { return write(tx, false) })
						}
						return nil
					}
					return err
				})
				require.NoError(t, scenario.FirstError(errs))
				row := load[AdoptOrder](t, db, id)
				if row.Total != 200 && row.Status != "shipped" {
					t.Fatalf("order %d: neither write landed", id)
				}
				if retry || old {
					if row.Total != 200 || row.Status != "shipped" {
						lost++
					}
				} else if (row.Total == 200) == (row.Status == "shipped") {
					lost++ // one write was refused: the other must be whole, alone
				}
				assert.NotEqual(t, lockplugin.NullVersion, row.Version, "order %d left NULL", id)
			}
			return lost, conflicts
		}
		lost, conflicts := run(true, false)
		t.Logf("%s baseline (NULL read as 0): %d of %d rows lost a change, %d conflicts", tg.Name, lost, adoptRows, conflicts)
		require.NotZero(t, lost, "the baseline must lose to show anything")
		lost, conflicts = run(false, false)
		t.Logf("%s NULL guarded: %d lost, %d of %d second writes refused", tg.Name, lost, conflicts, adoptRows)
		assert.Zero(t, lost)
		assert.EqualValues(t, adoptRows, conflicts, "exactly one write per row is refused")
		lost, conflicts = run(false, true)
		t.Logf("%s NULL guarded + RetryOnConflict: %d lost, %d conflicts retried", tg.Name, lost, conflicts)
		assert.Zero(t, lost)
	})
}

// AdoptItem is a plain versioned model for the multi-row writes.
type AdoptItem struct {
	ID   uint
	Name string
	lockplugin.Version
}

func (AdoptItem) TableName() string { return "i22_items" }

// A multi-row Update or Delete refused with ErrConcurrency (one of its rows
// is stale) reports RowsAffected 0 and leaves every row as it was, on its
// own and inside the caller's transaction.
func TestRefusedWriteReportsNoRows(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		writes := map[string]func(tx *gorm.DB, items []AdoptItem) *gorm.DB{
			"Model(slice).Update": func(tx *gorm.DB, items []AdoptItem) *gorm.DB {
				return tx.Model(&items).Update("name", "changed")
			},
			"Model(slice).Updates": func(tx *gorm.DB, items []AdoptItem) *gorm.DB {
				return tx.Model(&items).Updates(map[string]any{"name": "changed"})
			},
			"slice Delete": func(tx *gorm.DB, items []AdoptItem) *gorm.DB { return tx.Delete(&items) },
		}
		for name, write := range writes {
			for _, inTx := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/inTx=%v", name, inTx), func(t *testing.T) {
					tg.Reset(t, &AdoptItem{})
					items := []AdoptItem{{Name: "a"}, {Name: "b"}, {Name: "c"}}
					require.NoError(t, db.Create(&items).Error)
					// Another writer moves the last one on.
					require.NoError(t, db.Model(&AdoptItem{}).Where("id = ?", items[2].ID).Update("name", "theirs").Error)
					var res *gorm.DB
					if inTx {
						require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
							res = write(tx, items)
							return nil
						}))
					} else {
						res = write(db, items)
					}
					require.ErrorIs(t, res.Error, lockplugin.ErrConcurrency)
					assert.Zero(t, res.RowsAffected, "a refused write reports no row written")
					var rows []AdoptItem
					require.NoError(t, db.Order("id").Find(&rows).Error)
					require.Len(t, rows, 3)
					assert.Equal(t, []string{"a", "b", "theirs"}, []string{rows[0].Name, rows[1].Name, rows[2].Name})
					assert.Equal(t, []lockplugin.Version{1, 1, 2}, []lockplugin.Version{rows[0].Version, rows[1].Version, rows[2].Version})
				})
			}
		}
	})
}

// AdoptAuthor and AdoptPost: a versioned belongs-to.
type AdoptAuthor struct {
	ID   uint
	Name string
	lockplugin.Version
}

func (AdoptAuthor) TableName() string { return "i22_authors" }

type AdoptPost struct {
	ID       uint
	Title    string
	AuthorID *uint
	Author   *AdoptAuthor
	lockplugin.Version
}

func (AdoptPost) TableName() string { return "i22_posts" }

// Association writes on a belongs-to, then a write through the same owner
// struct. Clear and Replace write through the struct: its version follows
// the row's, and the next Append is no conflict. Delete is sent by GORM as
// an UPDATE by condition on a fresh model, out of the plugin's reach: the
// row's version moves and the struct's cannot, so the next write is
// ErrConcurrency, and its message names the call and the fix.
func TestAssociationWritesThenAppend(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		fresh := func() AdoptPost {
			tg.Reset(t, &AdoptAuthor{}, &AdoptPost{})
			p := AdoptPost{Title: "p", Author: &AdoptAuthor{Name: "a"}}
			require.NoError(t, db.Create(&p).Error)
			return p
		}
		inSync := func(p *AdoptPost) {
			t.Helper()
			assert.EqualValues(t, load[AdoptPost](t, db, p.ID).Version, p.Version, "the struct's version is the row's")
		}
		for name, clear := range map[string]func(p *AdoptPost) error{
			"Clear":   func(p *AdoptPost) error { return db.Model(p).Association("Author").Clear() },
			"Replace": func(p *AdoptPost) error { return db.Model(p).Association("Author").Replace(&AdoptAuthor{Name: "b"}) },
		} {
			t.Run(name+" then Append", func(t *testing.T) {
				p := fresh()
				require.NoError(t, clear(&p))
				inSync(&p)
				require.NoError(t, db.Model(&p).Association("Author").Append(&AdoptAuthor{Name: "c"}), "no ErrConcurrency")
				inSync(&p)
				p.Title = "saved"
				require.NoError(t, db.Save(&p).Error)
			})
		}
		t.Run("Delete then Append", func(t *testing.T) {
			p := fresh()
			require.NoError(t, db.Model(&p).Association("Author").Delete(p.Author))
			row := load[AdoptPost](t, db, p.ID)
			assert.Nil(t, row.AuthorID)
			assert.EqualValues(t, 2, row.Version, "the owner's row moved, so that other holders see the change")
			assert.EqualValues(t, 1, p.Version, "GORM gives the plugin no way to the owner struct")
			err := db.Model(&p).Association("Author").Append(&AdoptAuthor{Name: "c"})
			require.ErrorIs(t, err, lockplugin.ErrConcurrency)
			assert.Contains(t, err.Error(), `Association("Author").Delete`)
			assert.Contains(t, err.Error(), `read the owner again`)
			assert.Contains(t, err.Error(), `Association("Author").Clear()`)
			t.Logf("%s: %v", tg.Name, err)
			// Read again, as the message says: the Append goes through.
			p = load[AdoptPost](t, db, p.ID)
			require.NoError(t, db.Model(&p).Association("Author").Append(&AdoptAuthor{Name: "c"}))
			inSync(&p)
		})
	})
}

// AdoptNote belongs to an author by value (not a pointer).
type AdoptNote struct {
	ID       uint
	AuthorID *uint
	Author   AdoptAuthor
}

func (AdoptNote) TableName() string { return "i22_notes" }

// A relation that Joins finds empty (its LEFT JOIN columns all NULL) stays
// the zero struct: its NULL version is not NullVersion.
func TestJoinsEmptyRelation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &AdoptAuthor{}, &AdoptNote{})
		a := AdoptAuthor{Name: "a"}
		require.NoError(t, db.Create(&a).Error)
		require.NoError(t, db.Create(&[]AdoptNote{{}, {AuthorID: &a.ID}}).Error)
		var notes []AdoptNote
		require.NoError(t, db.Joins("Author").Order("i22_notes.id").Find(&notes).Error)
		require.Len(t, notes, 2)
		assert.Equal(t, AdoptAuthor{}, notes[0].Author, "no author: the zero struct")
		assert.EqualValues(t, 1, notes[1].Author.Version, "a joined row has its version")
	})
}
