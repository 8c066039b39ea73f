// Package version_test is the conformance suite of optimistic locking
// (issue 3): every update path and Delete of a versioned model, against
// every database reachable. Tables start with "ver_".
package version_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Book is the versioned model most tests write.
type Book struct {
	ID    uint
	Title string
	Pages int
	lockplugin.Version
}

func (Book) TableName() string { return "ver_books" }

// SoftBook is versioned and soft-deleted.
type SoftBook struct {
	ID    uint
	Title string
	Pages int
	lockplugin.Version
	DeletedAt gorm.DeletedAt
}

func (SoftBook) TableName() string { return "ver_soft_books" }

// Invoice keeps its version in a named field with its own column.
type Invoice struct {
	ID     uint
	Amount int
	Rev    lockplugin.Version `gorm:"column:lock_version"`
}

func (Invoice) TableName() string { return "ver_invoices" }

// eachTarget runs fn on every database testdb.Each reaches, and once more
// on MySQL/MariaDB with clientFoundRows=true, which makes the server report
// matched rows instead of changed rows.
func eachTarget(t *testing.T, fn func(t *testing.T, tg *testdb.Target)) {
	t.Helper()
	testdb.Each(t, fn)
	t.Run("mysql+clientFoundRows", func(t *testing.T) {
		tg := testdb.Open(t, testdb.MySQL, func(dsn string) string {
			if strings.Contains(dsn, "?") {
				return dsn + "&clientFoundRows=true"
			}
			return dsn + "?clientFoundRows=true"
		})
		fn(t, tg)
	})
}

func ctxOf(t *testing.T) context.Context { return t.Context() }

// load reads a row whatever its soft-delete state.
func load[T any](t *testing.T, db *gorm.DB, id uint) T {
	t.Helper()
	var v T
	require.NoError(t, db.Unscoped().First(&v, id).Error)
	return v
}

// twoCopies creates a book and loads it twice, as two users would.
func twoCopies(t *testing.T, db *gorm.DB) (a, b Book) {
	t.Helper()
	orig := Book{Title: "orig", Pages: 10}
	require.NoError(t, db.Create(&orig).Error)
	assert.EqualValues(t, 1, orig.Version, "Create writes version 1")
	require.NoError(t, db.First(&a, orig.ID).Error)
	require.NoError(t, db.First(&b, orig.ID).Error)
	return a, b
}

// requireConflict checks that err is a stale write of want, read at version
// read, whose row is now at current (0 with deleted).
func requireConflict(t *testing.T, err error, want any, op string, read, current lockplugin.Version, deleted bool) *lockplugin.ConcurrencyError {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, lockplugin.ErrConcurrency)
	var ce *lockplugin.ConcurrencyError
	require.ErrorAs(t, err, &ce)
	if reflectPtr(want) {
		assert.Same(t, want, ce.Entity, "Entity is the stale model the caller passed")
	} else {
		assert.EqualValues(t, want, ce.Entity)
	}
	assert.EqualValues(t, op, ce.Op)
	assert.EqualValues(t, read, ce.Version)
	assert.EqualValues(t, current, ce.Current)
	assert.EqualValues(t, deleted, ce.Deleted)
	return ce
}

func reflectPtr(v any) bool {
	switch v.(type) {
	case *Book, *SoftBook, *Invoice, *HookBook:
		return true
	}
	return false
}

type updatePath struct {
	name string
	// write sets the title of b to title through one update path.
	write func(ctx context.Context, db *gorm.DB, b *Book, title string) error
	// byValue: the path passes the model by value (the generics API), so
	// the caller's struct cannot be given the new version.
	byValue bool
}

var updatePaths = []updatePath{
	{name: "Save", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		b.Title = title
		return db.Save(b).Error
	}},
	{name: "Select.Save", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		b.Title, b.Pages = title, 77 // Pages is not selected: not written
		return db.Select("title").Save(b).Error
	}},
	{name: "Updates struct", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		return db.Model(b).Updates(Book{Title: title}).Error
	}},
	{name: "Updates map", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		return db.Model(b).Updates(map[string]any{"title": title}).Error
	}},
	{name: "Update", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		return db.Model(b).Update("title", title).Error
	}},
	{name: "UpdateColumn", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		return db.Model(b).UpdateColumn("title", title).Error
	}},
	{name: "UpdateColumns", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		return db.Model(b).UpdateColumns(map[string]any{"title": title}).Error
	}},
	{name: "Select.Updates", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		return db.Model(b).Select("title").Updates(Book{Title: title, Pages: 77}).Error
	}},
	{name: "Omit(version).Save", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		b.Title = title
		return db.Omit("version").Save(b).Error
	}},
	{name: "Updates map naming the version", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		// The map's version guards the write, with the Model's (they must
		// agree); the assignment to it is replaced by the increment.
		return db.Model(b).Updates(map[string]any{"title": title, "version": b.Version}).Error
	}},
	{name: "UpdateColumns struct", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		return db.Model(b).UpdateColumns(Book{Title: title}).Error
	}},
	{name: "Updates of the loaded struct on a key-only Model", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		// The Model carries no version; the values are the loaded struct,
		// whose version guards the update instead of being dropped.
		b.Title = title
		return db.Model(&Book{ID: b.ID}).Updates(b).Error
	}},
	{name: "Updates of the loaded struct by condition", write: func(_ context.Context, db *gorm.DB, b *Book, title string) error {
		// The Model carries neither key nor version: both come from the
		// loaded struct, and the caller's condition stays.
		b.Title = title
		return db.Model(&Book{}).Where("pages >= ?", 0).Updates(b).Error
	}},
	{name: "generics Select.Updates", byValue: true, write: func(ctx context.Context, db *gorm.DB, b *Book, title string) error {
		b.Title = title
		_, err := gorm.G[Book](db).Where("id = ?", b.ID).Select("title").Updates(ctx, *b)
		return err
	}},
	{name: "generics Updates", byValue: true, write: func(ctx context.Context, db *gorm.DB, b *Book, title string) error {
		b.Title = title
		_, err := gorm.G[Book](db).Where("id = ?", b.ID).Updates(ctx, *b)
		return err
	}},
}

// Two copies loaded at version 1: the first write wins, the second returns
// ErrConcurrency naming the stale struct, and the row keeps the winner's
// data at version 2. The winner writes again from the same struct: version 3.
func TestTwoCopiesEveryUpdatePath(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *testdb.Target) {
		for _, p := range updatePaths {
			t.Run(p.name, func(t *testing.T) {
				ctx := ctxOf(t)
				db := tg.DB.WithContext(ctx)
				tg.Reset(t, &Book{})
				a, b := twoCopies(t, db)

				require.NoError(t, p.write(ctx, db, &a, "winner"))
				if !p.byValue {
					assert.EqualValues(t, 2, a.Version, "the winner's struct carries the new version")
				}

				err := p.write(ctx, db, &b, "loser")
				var want any = &b
				if p.byValue {
					want = b
				}
				requireConflict(t, err, want, "update", 1, 2, false)
				assert.EqualValues(t, 1, b.Version, "the stale struct keeps the version it was read at")

				row := load[Book](t, db, a.ID)
				assert.EqualValues(t, "winner", row.Title)
				assert.EqualValues(t, 2, row.Version)
				assert.EqualValues(t, 10, row.Pages, "nothing of the loser's write landed")

				if p.byValue {
					// The generics API got a copy: the caller's struct is still
					// at version 1 and must be read again before the next write.
					assert.EqualValues(t, 1, a.Version)
					require.ErrorIs(t, p.write(ctx, db, &a, "again"), lockplugin.ErrConcurrency)
					a = load[Book](t, db, a.ID)
				}
				require.NoError(t, p.write(ctx, db, &a, "winner again"))
				row = load[Book](t, db, a.ID)
				assert.EqualValues(t, "winner again", row.Title)
				assert.EqualValues(t, 3, row.Version)
				if !p.byValue {
					assert.EqualValues(t, 3, a.Version)
				}
			})
		}
	})
}

// Delete of a loaded model is guarded like an update, hard and soft.
func TestDelete(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *testdb.Target) {
		ctx := ctxOf(t)
		db := tg.DB.WithContext(ctx)

		t.Run("stale Delete loses", func(t *testing.T) {
			tg.Reset(t, &Book{})
			a, b := twoCopies(t, db)
			a.Title = "winner"
			require.NoError(t, db.Save(&a).Error)

			requireConflict(t, db.Delete(&b).Error, &b, "delete", 1, 2, false)
			row := load[Book](t, db, a.ID)
			assert.EqualValues(t, "winner", row.Title, "the row was not deleted")

			require.NoError(t, db.Delete(&a).Error, "the current version deletes")
			var n int64
			require.NoError(t, db.Model(&Book{}).Where("id = ?", a.ID).Count(&n).Error)
			assert.Zero(t, n)
		})

		t.Run("Delete through Model", func(t *testing.T) {
			// GORM deletes the Model's row when the value given to
			// Delete carries no key: the Model's version guards it.
			tg.Reset(t, &Book{})
			a, b := twoCopies(t, db)
			a.Title = "winner"
			require.NoError(t, db.Save(&a).Error)

			requireConflict(t, db.Model(&b).Delete(&Book{}).Error, &b, "delete", 1, 2, false)
			assert.EqualValues(t, "winner", load[Book](t, db, a.ID).Title, "the row was not deleted")

			require.NoError(t, db.Model(&a).Delete(&Book{}).Error, "the current version deletes")
			var n int64
			require.NoError(t, db.Model(&Book{}).Where("id = ?", a.ID).Count(&n).Error)
			assert.Zero(t, n)
		})

		t.Run("soft Delete through Model", func(t *testing.T) {
			tg.Reset(t, &SoftBook{})
			orig := SoftBook{Title: "orig"}
			require.NoError(t, db.Create(&orig).Error)
			var a, b SoftBook
			require.NoError(t, db.First(&a, orig.ID).Error)
			require.NoError(t, db.First(&b, orig.ID).Error)
			a.Title = "winner"
			require.NoError(t, db.Save(&a).Error)

			requireConflict(t, db.Model(&b).Delete(&SoftBook{}).Error, &b, "delete", 1, 2, false)
			assert.False(t, load[SoftBook](t, db, a.ID).DeletedAt.Valid, "the stale soft delete changed nothing")
			require.NoError(t, db.Model(&a).Delete(&SoftBook{}).Error)
			assert.EqualValues(t, 3, a.Version, "the Model gets the soft delete's new version")
			assert.True(t, load[SoftBook](t, db, a.ID).DeletedAt.Valid)
		})

		t.Run("Delete wins", func(t *testing.T) {
			tg.Reset(t, &Book{})
			a, b := twoCopies(t, db)
			require.NoError(t, db.Delete(&a).Error)
			b.Title = "loser"
			requireConflict(t, db.Save(&b).Error, &b, "update", 1, 0, true)
			var n int64
			require.NoError(t, db.Model(&Book{}).Where("id = ?", a.ID).Count(&n).Error)
			assert.Zero(t, n, "Save did not fall back to inserting the deleted row")
		})

		t.Run("soft Delete", func(t *testing.T) {
			tg.Reset(t, &SoftBook{})
			orig := SoftBook{Title: "orig"}
			require.NoError(t, db.Create(&orig).Error)
			var a, b, c SoftBook
			require.NoError(t, db.First(&a, orig.ID).Error)
			require.NoError(t, db.First(&b, orig.ID).Error)
			require.NoError(t, db.First(&c, orig.ID).Error)

			a.Title = "winner"
			require.NoError(t, db.Save(&a).Error)
			requireConflict(t, db.Delete(&b).Error, &b, "delete", 1, 2, false)
			row := load[SoftBook](t, db, a.ID)
			assert.False(t, row.DeletedAt.Valid, "the stale soft delete changed nothing")

			require.NoError(t, db.Delete(&a).Error)
			assert.EqualValues(t, 3, a.Version, "a soft delete increments the version")
			row = load[SoftBook](t, db, a.ID)
			assert.True(t, row.DeletedAt.Valid)
			assert.EqualValues(t, 3, row.Version)

			c.Title = "resurrect"
			requireConflict(t, db.Save(&c).Error, &c, "update", 1, 0, true)
			// Even Unscoped, a stale holder cannot write the row back.
			requireConflict(t, db.Unscoped().Save(&c).Error, &c, "update", 1, 3, false)
			row = load[SoftBook](t, db, a.ID)
			assert.EqualValues(t, "winner", row.Title)
			assert.True(t, row.DeletedAt.Valid)
		})
	})
}

// With MySQL's default (changed rows), an UPDATE that writes the values a
// row already has reports 0 rows; the version always changes, so a Save of
// an unchanged model is never mistaken for a conflict.
func TestSaveUnchanged(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &Book{})
		a, _ := twoCopies(t, db)
		require.NoError(t, db.Save(&a).Error)
		require.NoError(t, db.Save(&a).Error)
		require.NoError(t, db.Model(&a).Update("title", a.Title).Error)
		assert.EqualValues(t, 4, a.Version)
		assert.EqualValues(t, 4, load[Book](t, db, a.ID).Version)
	})
}

// A version field with its own column name works the same way.
func TestNamedVersionColumn(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &Invoice{})
		assert.True(t, db.Migrator().HasColumn(&Invoice{}, "lock_version"))
		inv := Invoice{Amount: 5}
		require.NoError(t, db.Create(&inv).Error)
		assert.EqualValues(t, 1, inv.Rev)
		var a, b Invoice
		require.NoError(t, db.First(&a, inv.ID).Error)
		require.NoError(t, db.First(&b, inv.ID).Error)
		a.Amount = 6
		require.NoError(t, db.Save(&a).Error)
		assert.EqualValues(t, 2, a.Rev)
		b.Amount = 7
		requireConflict(t, db.Save(&b).Error, &b, "update", 1, 2, false)
		assert.EqualValues(t, 6, load[Invoice](t, db, a.ID).Amount)
	})
}

// Create keeps an explicit non-zero version.
func TestCreateKeepsExplicitVersion(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &Book{})
		b := Book{Title: "imported", Version: 41}
		require.NoError(t, db.Create(&b).Error)
		assert.EqualValues(t, 41, load[Book](t, db, b.ID).Version)
		batch := []Book{{Title: "x"}, {Title: "y", Version: 7}}
		require.NoError(t, db.Create(&batch).Error)
		assert.EqualValues(t, 1, load[Book](t, db, batch[0].ID).Version)
		assert.EqualValues(t, 7, load[Book](t, db, batch[1].ID).Version)
		require.NoError(t, db.Model(&Book{}).Create(map[string]any{"title": "from map"}).Error)
		var m Book
		require.NoError(t, db.Where("title = ?", "from map").First(&m).Error)
		assert.EqualValues(t, 1, m.Version)
	})
}

// An update without a loaded version is not guarded but bumps the version
// of every row it touches, so that their holders see a conflict.
func TestUnloadedUpdateBumpsEveryRow(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		ctx := ctxOf(t)
		db := tg.DB.WithContext(ctx)
		tg.Reset(t, &Book{})
		books := []Book{{Title: "a"}, {Title: "b"}, {Title: "c"}}
		require.NoError(t, db.Create(&books).Error)
		held := load[Book](t, db, books[0].ID)

		res := db.Model(&Book{}).Where("title IN ?", []string{"a", "b"}).Update("pages", 5)
		require.NoError(t, res.Error)
		assert.EqualValues(t, 2, res.RowsAffected)
		assert.EqualValues(t, 2, load[Book](t, db, books[0].ID).Version)
		assert.EqualValues(t, 2, load[Book](t, db, books[1].ID).Version)
		assert.EqualValues(t, 1, load[Book](t, db, books[2].ID).Version, "untouched row keeps its version")

		n, err := gorm.G[Book](db).Where("title = ?", "c").Update(ctx, "pages", 9)
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
		assert.EqualValues(t, 2, load[Book](t, db, books[2].ID).Version, "the generics API bumps too")

		held.Title = "stale"
		requireConflict(t, db.Save(&held).Error, &held, "update", 1, 2, false)

		res = db.Model(&Book{}).Where("title = ?", "nobody").Update("pages", 1)
		require.NoError(t, res.Error, "an unguarded update matching nothing is not a conflict")
		assert.Zero(t, res.RowsAffected)
	})
}

// SkipVersionCheck sends one statement without the guard; the version still
// increments.
func TestSkipVersionCheck(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &Book{})
		a, b := twoCopies(t, db)
		a.Title = "winner"
		require.NoError(t, db.Save(&a).Error)

		b.Title = "admin"
		require.NoError(t, db.Clauses(lockplugin.SkipVersionCheck()).Save(&b).Error)
		row := load[Book](t, db, a.ID)
		assert.EqualValues(t, "admin", row.Title)
		assert.EqualValues(t, 3, row.Version)
		assert.EqualValues(t, 2, b.Version, "the overwriting struct is left at its version plus one")

		a.Title = "too late"
		requireConflict(t, db.Save(&a).Error, &a, "update", 2, 3, false)

		// The skip is for one statement only.
		b.Title = "again"
		requireConflict(t, db.Save(&b).Error, &b, "update", 2, 3, false)

		require.NoError(t, db.Clauses(lockplugin.SkipVersionCheck()).Delete(&b).Error)
		var n int64
		require.NoError(t, db.Model(&Book{}).Count(&n).Error)
		assert.Zero(t, n)
	})
}

// Save of a struct with a primary key but no version is an unguarded write;
// when its row does not exist, Save's fallback inserts it, and an upsert
// never moves a row's version back.
func TestUpsertNeverRollsBackVersion(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &Book{})

		fresh := Book{ID: 500, Title: "fresh"}
		require.NoError(t, db.Save(&fresh).Error)
		row := load[Book](t, db, 500)
		assert.EqualValues(t, "fresh", row.Title)
		assert.EqualValues(t, 1, row.Version)

		a := row
		a.Title = "v2"
		require.NoError(t, db.Save(&a).Error)
		require.NoError(t, db.Save(&a).Error)
		assert.EqualValues(t, 3, load[Book](t, db, 500).Version)

		up := Book{ID: 500, Title: "upserted", Version: 1}
		require.NoError(t, db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&up).Error)
		row = load[Book](t, db, 500)
		assert.EqualValues(t, "upserted", row.Title)
		assert.EqualValues(t, 4, row.Version, "the upsert incremented the version instead of writing 1")

		cols := Book{ID: 500, Title: "cols", Version: 1}
		require.NoError(t, db.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "id"}},
			DoUpdates: clause.AssignmentColumns([]string{"title", "version"}),
		}).Create(&cols).Error)
		row = load[Book](t, db, 500)
		assert.EqualValues(t, "cols", row.Title)
		assert.EqualValues(t, 5, row.Version)

		a.Title = "stale"
		requireConflict(t, db.Save(&a).Error, &a, "update", 3, 5, false)
	})
}

// A versioned model on a *gorm.DB without the plugin is an error before any
// SQL, not an unguarded write.
func TestWithoutPluginIsAnError(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		plain := tg.Plain.WithContext(ctxOf(t))
		tg.Reset(t, &Book{})
		a, _ := twoCopies(t, db)

		a.Title = "unguarded"
		err := plain.Save(&a).Error
		require.ErrorIs(t, err, lockplugin.ErrNotRegistered)
		assert.Contains(t, err.Error(), "update of Book")
		require.ErrorIs(t, plain.Model(&a).Update("title", "x").Error, lockplugin.ErrNotRegistered)
		require.ErrorIs(t, plain.Delete(&a).Error, lockplugin.ErrNotRegistered)
		require.ErrorIs(t, plain.Create(&Book{Title: "new"}).Error, lockplugin.ErrNotRegistered)

		row := load[Book](t, db, a.ID)
		assert.EqualValues(t, "orig", row.Title)
		assert.EqualValues(t, 1, row.Version)
		var n int64
		require.NoError(t, db.Model(&Book{}).Count(&n).Error)
		assert.EqualValues(t, 1, n, "nothing was written")
	})
}

// HookBook counts its hooks.
type HookBook struct {
	ID    uint
	Title string
	lockplugin.Version

	beforeUpdate, afterUpdate, beforeDelete, afterDelete int
	versionInAfterUpdate                                 lockplugin.Version
}

func (HookBook) TableName() string { return "ver_hook_books" }

func (h *HookBook) BeforeUpdate(*gorm.DB) error { h.beforeUpdate++; return nil }
func (h *HookBook) AfterUpdate(*gorm.DB) error {
	h.afterUpdate++
	h.versionInAfterUpdate = h.Version
	return nil
}
func (h *HookBook) BeforeDelete(*gorm.DB) error { h.beforeDelete++; return nil }
func (h *HookBook) AfterDelete(*gorm.DB) error  { h.afterDelete++; return nil }

// Model hooks still run: before-hooks always, after-hooks only on success,
// and AfterUpdate already sees the new version.
func TestHooks(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &HookBook{})
		orig := HookBook{Title: "orig"}
		require.NoError(t, db.Create(&orig).Error)
		var a, b HookBook
		require.NoError(t, db.First(&a, orig.ID).Error)
		require.NoError(t, db.First(&b, orig.ID).Error)

		a.Title = "winner"
		require.NoError(t, db.Save(&a).Error)
		assert.EqualValues(t, 1, a.beforeUpdate)
		assert.EqualValues(t, 1, a.afterUpdate)
		assert.EqualValues(t, 2, a.versionInAfterUpdate)

		b.Title = "loser"
		requireConflict(t, db.Save(&b).Error, &b, "update", 1, 2, false)
		assert.EqualValues(t, 1, b.beforeUpdate)
		assert.EqualValues(t, 0, b.afterUpdate, "no AfterUpdate for a write that did not happen")

		requireConflict(t, db.Delete(&b).Error, &b, "delete", 1, 2, false)
		assert.EqualValues(t, 1, b.beforeDelete)
		assert.EqualValues(t, 0, b.afterDelete)

		require.NoError(t, db.Delete(&a).Error)
		assert.EqualValues(t, 1, a.beforeDelete)
		assert.EqualValues(t, 1, a.afterDelete)
	})
}

// A transaction that meets a conflict rolls back whole.
func TestConflictRollsBackTransaction(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &Book{}, &Invoice{})
		a, b := twoCopies(t, db)
		a.Title = "winner"
		require.NoError(t, db.Save(&a).Error)

		err := db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&Invoice{Amount: 1}).Error; err != nil {
				return err
			}
			b.Title = "loser"
			return tx.Save(&b).Error
		})
		require.ErrorIs(t, err, lockplugin.ErrConcurrency)
		var n int64
		require.NoError(t, db.Model(&Invoice{}).Count(&n).Error)
		assert.Zero(t, n, "the invoice written before the conflict was rolled back")
	})
}

func TestErrorsAreDistinct(t *testing.T) {
	assert.False(t, errors.Is(lockplugin.ErrNotRegistered, lockplugin.ErrConcurrency))
}

// With prepared statements, the guard, the re-read after a conflict and a
// guarded batch work the same.
func TestPreparedStatements(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t)).Session(&gorm.Session{PrepareStmt: true})
		tg.Reset(t, &Book{})
		a, b := twoCopies(t, db)
		a.Title = "winner"
		require.NoError(t, db.Save(&a).Error)
		b.Title = "loser"
		requireConflict(t, db.Save(&b).Error, &b, "update", 1, 2, false)

		c := Book{Title: "c", Pages: 10}
		require.NoError(t, db.Create(&c).Error)
		books := []Book{c, b}
		requireConflict(t, db.Model(&books).Update("pages", 3).Error, &books[1], "update", 1, 2, false)
		assert.EqualValues(t, 10, load[Book](t, db, c.ID).Pages, "the batch changed nothing")
	})
}

// Author, Post and Comment are versioned models linked by belongs-to and
// has-many, for FullSaveAssociations.
type Author struct {
	ID   uint
	Name string
	lockplugin.Version
}

func (Author) TableName() string { return "ver_authors" }

type Post struct {
	ID       uint
	Title    string
	AuthorID uint
	Author   Author
	Comments []Comment
	lockplugin.Version
}

func (Post) TableName() string { return "ver_posts" }

type Comment struct {
	ID     uint
	PostID uint
	Body   string
	lockplugin.Version
}

func (Comment) TableName() string { return "ver_comments" }

// With FullSaveAssociations GORM saves a model's associations by upsert,
// which would overwrite a newer associated row; loaded associations are
// saved guarded instead, and a stale one fails the whole Save.
func TestFullSaveAssociations(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		full := db.Session(&gorm.Session{FullSaveAssociations: true})
		tg.Reset(t, &Author{}, &Post{}, &Comment{})
		orig := Post{Title: "orig", Author: Author{Name: "orig"}, Comments: []Comment{{Body: "orig"}}}
		require.NoError(t, db.Create(&orig).Error)
		loadPost := func() Post {
			var p Post
			require.NoError(t, db.Preload("Author").Preload("Comments").First(&p, orig.ID).Error)
			return p
		}

		t.Run("stale belongs-to", func(t *testing.T) {
			a, b := loadPost(), loadPost()
			a.Author.Name = "winner"
			require.NoError(t, db.Save(&a.Author).Error)

			b.Title, b.Author.Name = "loser", "loser"
			requireConflict(t, full.Save(&b).Error, &b.Author, "update", 1, 2, false)
			now := loadPost()
			assert.EqualValues(t, "winner", now.Author.Name, "the newer author row was not overwritten")
			assert.EqualValues(t, 2, now.Author.Version)
			assert.EqualValues(t, "orig", now.Title, "the post's own update was rolled back")
		})

		t.Run("stale has-many", func(t *testing.T) {
			a, b := loadPost(), loadPost()
			a.Comments[0].Body = "winner"
			require.NoError(t, db.Save(&a.Comments[0]).Error)

			b.Title, b.Comments[0].Body = "loser", "loser"
			requireConflict(t, full.Save(&b).Error, &b.Comments[0], "update", 1, 2, false)
			now := loadPost()
			assert.EqualValues(t, "winner", now.Comments[0].Body, "the newer comment row was not overwritten")
			assert.EqualValues(t, "orig", now.Title)
		})

		t.Run("current associations", func(t *testing.T) {
			p := loadPost()
			p.Title, p.Author.Name, p.Comments[0].Body = "new", "new", "new"
			p.Comments = append(p.Comments, Comment{Body: "added"})
			require.NoError(t, full.Save(&p).Error)
			assert.EqualValues(t, 3, p.Author.Version, "the struct carries the author's new version")
			assert.EqualValues(t, 3, p.Comments[0].Version)
			assert.EqualValues(t, 1, p.Comments[1].Version)
			now := loadPost()
			assert.EqualValues(t, "new", now.Title)
			assert.EqualValues(t, "new", now.Author.Name)
			assert.EqualValues(t, 2, len(now.Comments))
			assert.EqualValues(t, 3, now.Author.Version)
		})
	})
}
