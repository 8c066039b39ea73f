package fence_test

import (
	"context"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// token is a bare fencing token: fences 5 (older) and 9 (newer).
type token int64

func (t token) Fence() int64 { return int64(t) }

type softAccount struct {
	ID      uint `gorm:"primaryKey"`
	Balance int64
	Deleted gorm.DeletedAt
	lockplugin.Fence
}

func (softAccount) TableName() string { return "i16_soft_accounts" }

// TestI16FencedWriteShapes: the guard holds on every write shape, on every
// database: Save of a new row with its key set (Save's insert fallback),
// Save of an unchanged row, Updates by conditions over many rows (rows
// under a newer fence are left alone and the write is reported stale),
// soft delete, a column-restricted update, and upserts (guarded on
// PostgreSQL and SQLite, refused before any SQL elsewhere).
func TestI16FencedWriteShapes(t *testing.T) {
	ctx := context.Background()
	old, cur := token(5), token(9)
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if refusedOnTiDB(t, tg) {
			return
		}
		tg.Reset(t, &account{}, &softAccount{})
		oldDB := tg.DB.WithContext(lockplugin.WithFence(ctx, old))
		curDB := tg.DB.WithContext(lockplugin.WithFence(ctx, cur))

		// Save of a new row with its key: the UPDATE finds nothing, Save
		// inserts (a plain INSERT, fenced).
		a := account{ID: 1000, Balance: 1}
		noErr(t, curDB.Save(&a).Error)
		var got account
		noErr(t, tg.DB.First(&got, 1000).Error)
		want(t, got.Fence == 9 && got.Balance == 1, "Save of a new keyed row: %+v", got)
		// An older holder's Save of it: refused, not upserted.
		stale := account{ID: 1000, Balance: 2}
		isErr(t, oldDB.Save(&stale).Error, lockplugin.ErrStaleFence)
		// A column-restricted update still writes the fence and is guarded.
		isErr(t, oldDB.Model(&account{ID: 1000}).Select("balance").Updates(account{Balance: 3}).Error, lockplugin.ErrStaleFence)
		noErr(t, curDB.Model(&account{ID: 1000}).Select("balance").Updates(account{Balance: 4}).Error)
		got = account{}
		noErr(t, tg.DB.First(&got, 1000).Error)
		want(t, got.Balance == 4 && got.Fence == 9, "after restricted updates: %+v", got)

		// Many rows by conditions: two at fence 9, two at fence 1.
		for i := range 4 {
			f := token(1)
			if i < 2 {
				f = cur
			}
			noErr(t, tg.DB.WithContext(lockplugin.WithFence(ctx, f)).Create(&account{ID: uint(2000 + i), Balance: 10}).Error)
		}
		err := oldDB.Model(&account{}).Where("id >= ? AND id < ?", 2000, 2004).Update("balance", 11).Error
		isErr(t, err, lockplugin.ErrStaleFence)
		var n9 int64
		noErr(t, tg.DB.Model(&account{}).Where("id >= ? AND id < ? AND fence = 9 AND balance = 10", 2000, 2004).Count(&n9).Error)
		want(t, n9 == 2, "rows under the newer fence written by the older holder: %d of 2 left", n9)
		noErr(t, curDB.Model(&account{}).Where("id >= ? AND id < ?", 2000, 2004).Update("balance", 12).Error)
		// Without conditions: GORM's own refusal, not a global write.
		isErr(t, curDB.Model(&account{}).Update("balance", 0).Error, gorm.ErrMissingWhereClause)

		// Soft delete: guarded, and Unscoped too.
		s := softAccount{Balance: 1}
		noErr(t, curDB.Create(&s).Error)
		isErr(t, oldDB.Delete(&softAccount{ID: s.ID}).Error, lockplugin.ErrStaleFence)
		isErr(t, oldDB.Unscoped().Delete(&softAccount{ID: s.ID}).Error, lockplugin.ErrStaleFence)
		var left int64
		noErr(t, tg.DB.Model(&softAccount{}).Where("id = ?", s.ID).Count(&left).Error)
		want(t, left == 1, "a stale soft delete deleted the row")
		noErr(t, curDB.Delete(&softAccount{ID: s.ID}).Error)

		// Upserts.
		up := account{ID: 1000, Balance: 50}
		err = oldDB.Clauses(clause.OnConflict{UpdateAll: true}).Create(&up).Error
		if tg.Is(dialects.Postgres, dialects.SQLite) {
			isErr(t, err, lockplugin.ErrStaleFence)
			up = account{ID: 1000, Balance: 51}
			noErr(t, curDB.Clauses(clause.OnConflict{UpdateAll: true}).Create(&up).Error)
		} else {
			isErr(t, err, lockplugin.ErrUnsupported)
		}
		got = account{}
		noErr(t, tg.DB.First(&got, 1000).Error)
		want(t, got.Balance != 50, "a stale upsert landed: %+v", got)
		// Save of a slice is an upsert too.
		rows := []account{{ID: 3000, Balance: 1}, {ID: 3001, Balance: 1}}
		err = curDB.Save(&rows).Error
		if tg.Is(dialects.Postgres, dialects.SQLite) {
			noErr(t, err)
			staleRows := []account{{ID: 3000, Balance: 2}, {ID: 3001, Balance: 2}}
			isErr(t, oldDB.Save(&staleRows).Error, lockplugin.ErrStaleFence)
			var n int64
			noErr(t, tg.DB.Model(&account{}).Where("id IN ? AND balance = 1 AND fence = 9", []int{3000, 3001}).Count(&n).Error)
			want(t, n == 2, "a stale slice Save landed on %d of 2 rows", 2-n)
		} else {
			isErr(t, err, lockplugin.ErrUnsupported)
		}
		// DO NOTHING writes nothing over a row: allowed.
		noErr(t, oldDB.Clauses(clause.OnConflict{DoNothing: true}).Create(&account{ID: 1000, Balance: 60}).Error)
		t.Logf("%s: every stale write shape refused", tg.Name)
	})
}
