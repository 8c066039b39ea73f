package fence_test

import (
	"context"
	"testing"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// BenchmarkI16FencedSave: Save of one row through plain GORM (the
// baseline), through lockplugin unfenced, and fenced, in the same run, on
// every reachable database. Compare ns/op across the leaves.
func BenchmarkI16FencedSave(b *testing.B) {
	ctx := context.Background()
	for _, kind := range []string{testdb.SQLite, testdb.Postgres, testdb.MySQL} {
		b.Run(kind, func(b *testing.B) {
			tg := testdb.Get(b, kind)
			tg.Reset(b, &account{})
			row := account{ID: 1}
			if err := tg.DB.Create(&row).Error; err != nil {
				b.Fatal(err)
			}
			run := func(b *testing.B, save func(r *account) error) {
				r := row
				for i := 0; b.Loop(); i++ {
					r.Balance = int64(i)
					if err := save(&r); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.Run("baseline=plain-gorm", func(b *testing.B) { run(b, func(r *account) error { return tg.Plain.Save(r).Error }) })
			b.Run("baseline=unfenced", func(b *testing.B) { run(b, func(r *account) error { return tg.DB.Save(r).Error }) })
			fdb := tg.DB.WithContext(lockplugin.WithFence(ctx, token(7)))
			b.Run("lockplugin", func(b *testing.B) { run(b, func(r *account) error { return fdb.Save(r).Error }) })
		})
	}
}
