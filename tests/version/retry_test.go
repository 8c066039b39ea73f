package version_test

import (
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each attempt of RetryOnConflict is its own transaction: what a failed
// attempt wrote is rolled back; other errors end it at once.
func TestRetryOnConflict(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		ctx := ctxOf(t)
		db := tg.DB.WithContext(ctx)
		tg.Reset(t, &Book{}, &Invoice{})
		_, stale := twoCopies(t, db)
		require.NoError(t, db.Model(&Book{}).Where("id = ?", stale.ID).Update("pages", 1).Error)

		runs := 0
		err := lockplugin.RetryOnConflict(ctx, db, 3, func(tx *gorm.DB) error {
			runs++
			if err := tx.Create(&Invoice{Amount: runs}).Error; err != nil {
				return err
			}
			b := stale // a stale copy every time: it never succeeds
			b.Title = "x"
			return tx.Save(&b).Error
		})
		require.ErrorIs(t, err, lockplugin.ErrConcurrency)
		assert.EqualValues(t, 3, runs, "runs")
		var n int64
		require.NoError(t, db.Model(&Invoice{}).Count(&n).Error)
		assert.EqualValues(t, 0, n, "every attempt rolled back")

		boom := errors.New("boom")
		runs = 0
		err = lockplugin.RetryOnConflict(ctx, db, 3, func(*gorm.DB) error { runs++; return boom })
		require.ErrorIs(t, err, boom)
		assert.EqualValues(t, 1, runs, "a non-retryable error is not retried")

		runs = 0
		require.NoError(t, lockplugin.RetryOnConflict(ctx, db, 3, func(tx *gorm.DB) error {
			runs++
			var b Book
			if err := tx.First(&b, stale.ID).Error; err != nil {
				return err
			}
			b.Title = "fresh"
			return tx.Save(&b).Error
		}))
		assert.EqualValues(t, 1, runs)
		assert.EqualValues(t, "fresh", load[Book](t, db, stale.ID).Title)

		err = db.Transaction(func(tx *gorm.DB) error {
			return lockplugin.RetryOnConflict(ctx, tx, 3, func(*gorm.DB) error { return nil })
		})
		require.Error(t, err, "RetryOnConflict refuses a *gorm.DB inside a transaction")
	})
}
