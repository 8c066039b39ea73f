package version_test

import (
	"fmt"
	"testing"

	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// threeBooks creates three books and returns them as loaded (version 1).
func threeBooks(t *testing.T, db *gorm.DB) []Book {
	t.Helper()
	books := []Book{{Title: "a0"}, {Title: "b0"}, {Title: "c0"}}
	require.NoError(t, db.Create(&books).Error)
	var loaded []Book
	require.NoError(t, db.Order("id").Find(&loaded).Error)
	return loaded
}

// rowsOf reads every book, by id.
func rowsOf(t *testing.T, db *gorm.DB) map[uint]Book {
	t.Helper()
	var all []Book
	require.NoError(t, db.Order("id").Find(&all).Error)
	m := make(map[uint]Book, len(all))
	for _, b := range all {
		m[b.ID] = b
	}
	return m
}

// A Save of a slice with one stale element changes no row, in every
// transaction setting, and leaves the structs as they were.
func TestSliceSaveOneStale(t *testing.T) {
	settings := []struct {
		name string
		run  func(db *gorm.DB, books *[]Book, fresh *Book) error
	}{
		{"default transaction", func(db *gorm.DB, books *[]Book, _ *Book) error {
			return db.Save(books).Error
		}},
		{"SkipDefaultTransaction", func(db *gorm.DB, books *[]Book, _ *Book) error {
			return db.Session(&gorm.Session{SkipDefaultTransaction: true}).Save(books).Error
		}},
		{"inside a transaction", func(db *gorm.DB, books *[]Book, fresh *Book) error {
			return db.Transaction(func(tx *gorm.DB) error {
				if err := tx.Create(fresh).Error; err != nil {
					return err
				}
				return tx.Save(books).Error
			})
		}},
		{"pointers", func(db *gorm.DB, books *[]Book, _ *Book) error {
			ptrs := make([]*Book, len(*books))
			for i := range *books {
				ptrs[i] = &(*books)[i]
			}
			return db.Save(&ptrs).Error
		}},
	}
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		for _, s := range settings {
			t.Run(s.name, func(t *testing.T) {
				db := tg.DB.WithContext(ctxOf(t))
				tg.Reset(t, &Book{})
				books := threeBooks(t, db)

				// Somebody else changes the middle row.
				other := books[1]
				other.Title = "other"
				require.NoError(t, db.Save(&other).Error)
				before := rowsOf(t, db)

				for i := range books {
					books[i].Title += "-mine"
				}
				books = append(books, Book{Title: "new"})
				fresh := &Book{Title: "fresh"}
				err := s.run(db, &books, fresh)
				var want any = &books[1]
				ce := requireConflict(t, err, want, "update", 1, 2, false)
				assert.EqualValues(t, "ver_books", ce.Table)

				after := rowsOf(t, db)
				assert.EqualValues(t, before, after, "no row changed, no row added")
				for i, b := range books[:3] {
					assert.EqualValues(t, 1, b.Version, fmt.Sprintf("element %d keeps its version", i))
				}
				assert.EqualValues(t, 0, books[3].ID, "the new element was not inserted")
				assert.EqualValues(t, 0, books[3].Version)
			})
		}
	})
}

// A Save of a slice of current elements updates each one (guarded), inserts
// new ones, and gives every struct its new version.
func TestSliceSave(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &Book{})
		books := threeBooks(t, db)
		held := books[2]
		for i := range books {
			books[i].Title += "-1"
		}
		books = append(books, Book{Title: "new"})
		res := db.Save(&books)
		require.NoError(t, res.Error)
		assert.EqualValues(t, 4, res.RowsAffected)
		rows := rowsOf(t, db)
		assert.EqualValues(t, 4, len(rows))
		for _, b := range books {
			assert.EqualValues(t, b, rows[b.ID], "row matches the struct")
		}
		assert.EqualValues(t, 2, books[0].Version)
		assert.EqualValues(t, 1, books[3].Version)

		// The slice elements are guarded on the next Save too.
		require.NoError(t, db.Save(&books).Error)
		assert.EqualValues(t, 3, books[0].Version)
		held.Title = "stale"
		requireConflict(t, db.Save(&held).Error, &held, "update", 1, 3, false)

		// A slice of new rows only is one INSERT, as in plain GORM.
		newOnes := []Book{{Title: "n1"}, {Title: "n2"}}
		require.NoError(t, db.Save(&newOnes).Error)
		assert.EqualValues(t, 1, newOnes[1].Version)
	})
}

// Updates and Delete through a slice model guard every row, all or nothing,
// even without GORM's default transaction.
func TestSliceUpdatesAndDelete(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		for _, skipTx := range []bool{false, true} {
			name := "default transaction"
			if skipTx {
				name = "SkipDefaultTransaction"
			}
			t.Run(name, func(t *testing.T) {
				db := tg.DB.WithContext(ctxOf(t)).Session(&gorm.Session{SkipDefaultTransaction: skipTx})
				tg.Reset(t, &Book{})
				books := threeBooks(t, db)
				other := books[2]
				require.NoError(t, db.Model(&other).Update("pages", 1).Error)
				before := rowsOf(t, db)

				err := db.Model(&books).Update("title", "all")
				requireConflict(t, err.Error, &books[2], "update", 1, 2, false)
				assert.EqualValues(t, before, rowsOf(t, db), "no row changed")
				for _, b := range books {
					assert.EqualValues(t, 1, b.Version)
				}

				requireConflict(t, db.Delete(&books).Error, &books[2], "delete", 1, 2, false)
				assert.EqualValues(t, before, rowsOf(t, db), "no row deleted")

				books[2] = other
				require.NoError(t, db.Model(&books).Update("title", "all").Error)
				assert.EqualValues(t, 2, books[0].Version)
				assert.EqualValues(t, 2, books[1].Version)
				assert.EqualValues(t, 3, books[2].Version)
				require.NoError(t, db.Delete(&books).Error)
				assert.EqualValues(t, 0, len(rowsOf(t, db)))
			})
		}
	})
}
