package locks

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// BenchmarkWaitAtMost: one transaction locking one free row per op on
// PostgreSQL and MariaDB, with ForUpdate, with
// ForUpdate(WaitAtMost(2s)) (PostgreSQL: two more round trips, to set and
// restore lock_timeout; MariaDB: WAIT 2 in the statement), and by hand
// with database/sql as the baseline (PostgreSQL: SET LOCAL lock_timeout,
// which leaves the setting changed for the rest of the transaction).
func BenchmarkWaitAtMost(b *testing.B) {
	for _, kind := range []string{testdb.Postgres, testdb.MySQL} {
		b.Run(kind, func(b *testing.B) {
			tg := testdb.Get(b, kind)
			tg.Reset(b, &i14bRow{})
			if err := tg.DB.Create(&i14bRow{ID: 1}).Error; err != nil {
				b.Fatal(err)
			}
			lockOnce := func(b *testing.B, opts ...lockplugin.LockOption) {
				err := tg.DB.Transaction(func(tx *gorm.DB) error {
					var r i14bRow
					return tx.Clauses(lockplugin.ForUpdate(opts...)).First(&r, 1).Error
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.Run("ForUpdate", func(b *testing.B) {
				for b.Loop() {
					lockOnce(b)
				}
			})
			b.Run("WaitAtMost", func(b *testing.B) {
				for b.Loop() {
					lockOnce(b, lockplugin.WaitAtMost(2*time.Second))
				}
			})
			b.Run("baseline=database-sql", func(b *testing.B) {
				set, q := "SET LOCAL lock_timeout = '2000ms'", "SELECT id, n FROM i14b_rows WHERE id = $1 FOR UPDATE"
				if tg.Dialect.IsMySQLFamily() {
					set, q = "", "SELECT id, n FROM i14b_rows WHERE id = ? FOR UPDATE WAIT 2"
				}
				ctx := b.Context()
				for b.Loop() {
					tx, err := tg.SQL.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					if set != "" {
						if _, err := tx.ExecContext(ctx, set); err != nil {
							b.Fatal(err)
						}
					}
					var id, n int64
					if err := tx.QueryRowContext(ctx, q, 1).Scan(&id, &n); err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
