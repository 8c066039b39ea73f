package version_test

// Issue 11: StrictVersion, the re-read behind ConcurrencyError inside a
// transaction, and RetryOnConflict's two contexts.

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The optimisticlock#36 trap: a struct with its key but without its
// version (decoded from a form that left it out) overwrites the row by
// default; StrictVersion refuses it when the row exists, and still lets
// Save insert a row that does not.
func TestStrictVersion(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		strict := openWith(t, tg, lockplugin.StrictVersion())
		writes := map[string]func(db *gorm.DB, id uint) error{
			"Save": func(db *gorm.DB, id uint) error { return db.Save(&ShapeBook{ID: id, Title: "trap"}).Error },
			"Updates": func(db *gorm.DB, id uint) error {
				return db.Model(&ShapeBook{ID: id}).Updates(map[string]any{"title": "trap"}).Error
			},
			"Update": func(db *gorm.DB, id uint) error { return db.Model(&ShapeBook{ID: id}).Update("title", "trap").Error },
			"Save slice": func(db *gorm.DB, id uint) error {
				return db.Save(&[]ShapeBook{{ID: id, Title: "trap"}}).Error
			},
			"Delete": func(db *gorm.DB, id uint) error { return db.Delete(&ShapeBook{ID: id}).Error },
		}
		for name, write := range writes {
			t.Run(name, func(t *testing.T) {
				tg.Reset(t, &ShapeBook{})
				b := seedAt2(t, db)
				require.NoError(t, write(db, b.ID), "by default the zero-version write is the documented overwrite")
				var n int64
				require.NoError(t, db.Model(&ShapeBook{}).Where("id = ? AND title = ?", b.ID, "theirs").Count(&n).Error)
				assert.Zero(t, n, "the default overwrote (or deleted) the row")

				tg.Reset(t, &ShapeBook{})
				b = seedAt2(t, db)
				err := write(strict, b.ID)
				require.ErrorIs(t, err, lockplugin.ErrZeroVersion)
				assert.False(t, errors.Is(err, lockplugin.ErrConcurrency), "retrying cannot help")
				assert.Contains(t, err.Error(), "version 2")
				row := load[ShapeBook](t, db, b.ID)
				assert.EqualValues(t, "theirs", row.Title, "nothing was written")
				assert.EqualValues(t, 2, row.Version)
			})
		}

		t.Run("Save of a row that does not exist inserts it", func(t *testing.T) {
			tg.Reset(t, &ShapeBook{})
			nb := ShapeBook{ID: 4242, Title: "new"}
			require.NoError(t, strict.Save(&nb).Error)
			row := load[ShapeBook](t, db, 4242)
			assert.EqualValues(t, "new", row.Title)
			assert.EqualValues(t, 1, row.Version)
		})
		t.Run("loaded models, conditions and SkipVersionCheck are unaffected", func(t *testing.T) {
			tg.Reset(t, &ShapeBook{})
			b := seedAt2(t, db)
			b.Title = "loaded"
			require.NoError(t, strict.Save(&b).Error)
			require.NoError(t, strict.Model(&ShapeBook{}).Where("id = ?", b.ID).Update("pages", 3).Error)
			require.NoError(t, strict.Clauses(lockplugin.SkipVersionCheck()).Save(&ShapeBook{ID: b.ID, Title: "admin"}).Error)
			assert.EqualValues(t, "admin", load[ShapeBook](t, db, b.ID).Title)
		})
	})
}

// Inside a transaction that already read the row, another session updates
// (or deletes) it and commits: the stale write's ConcurrencyError says so.
// On MySQL/MariaDB a plain re-read would see the transaction's REPEATABLE
// READ snapshot (version 1, "the other conditions matched no row"); the
// re-read is a locking read there. RetryOnConflict's final error tells the
// same truth.
func TestConflictInsideTransactionReadsTheLatestRow(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if tg.Is(dialects.SQLite) {
			t.Skip("SQLite runs one writer at a time: another session cannot commit while the transaction is open")
		}
		ctx := ctxOf(t)
		db := tg.DB.WithContext(ctx)
		for _, deleted := range []bool{false, true} {
			name := "updated"
			if deleted {
				name = "deleted"
			}
			t.Run(name, func(t *testing.T) {
				tg.Reset(t, &ShapeBook{})
				b := ShapeBook{Title: "orig"}
				require.NoError(t, db.Create(&b).Error)

				err := db.Transaction(func(tx *gorm.DB) error {
					var mine ShapeBook
					if err := tx.First(&mine, b.ID).Error; err != nil { // the snapshot
						return err
					}
					other := load[ShapeBook](t, db, b.ID)
					if deleted {
						require.NoError(t, db.Delete(&other).Error)
					} else {
						other.Title = "theirs"
						require.NoError(t, db.Save(&other).Error)
					}
					mine.Title = "mine"
					return tx.Save(&mine).Error
				})
				if deleted {
					requireStale(t, err, "update", 1, 0, true)
				} else {
					requireStale(t, err, "update", 1, 2, false)
					assert.Contains(t, err.Error(), "now at version 2")
				}

				if deleted {
					return
				}
				// RetryOnConflict, every attempt stale: the final error names
				// the row's real version.
				stale := ShapeBook{ID: b.ID, Title: "x", Version: 1}
				err = lockplugin.RetryOnConflict(ctx, db, 2, func(tx *gorm.DB) error {
					var seen ShapeBook
					if err := tx.First(&seen, b.ID).Error; err != nil {
						return err
					}
					s := stale
					return tx.Save(&s).Error
				})
				requireStale(t, err, "update", 1, 2, false)
				assert.True(t, strings.Contains(err.Error(), "now at version 2"), "final error: %v", err)
			})
		}
	})
}

// RetryOnConflict ends when either its ctx or db's own context is done; a
// db context cancelled before the call runs fn not at all.
func TestRetryOnConflictHonoursDBContext(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		dbCtx, cancel := context.WithCancel(context.Background())
		cancel()
		runs := 0
		err := lockplugin.RetryOnConflict(ctxOf(t), tg.DB.WithContext(dbCtx), 5, func(*gorm.DB) error {
			runs++
			return nil
		})
		require.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, runs, "fn ran under a cancelled db context")

		// Cancelled between attempts: it stops at the next one.
		dbCtx, cancel = context.WithCancel(context.Background())
		defer cancel()
		runs = 0
		err = lockplugin.RetryOnConflict(ctxOf(t), tg.DB.WithContext(dbCtx), 5, func(*gorm.DB) error {
			runs++
			cancel()
			return lockplugin.ErrConcurrency
		})
		require.ErrorIs(t, err, context.Canceled)
		assert.EqualValues(t, 1, runs)
	})
}
