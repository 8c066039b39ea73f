package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestFencedWriteMeetsNewerCommit attacks the fenced write where TiDB
// differs from MySQL: TiDB runs an autocommit UPDATE without holding the
// row while the statement evaluates (MySQL and MariaDB lock the row first),
// so a newer holder's write can commit in the middle of a stale one, and
// TiDB retries the stale one. A stale write (fence 5) is slowed by a
// SLEEP(0.5) in its SET; 100 ms in, the newer holder (fence 6) writes. On
// TiDB the newer write lands first and the stale one must come back as
// ErrStaleFence, in each of 5 rounds, leaving fence 6; on MariaDB the newer
// write waits for the stale one, which lands first, and fence 6 overwrites
// it. Either way the row ends at fence 6 and no write is reported done that
// did not land. The unfenced baseline (the same writes setting the column)
// ends at fence 5 on TiDB: the test can fail.
func TestFencedWriteMeetsNewerCommit(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{testdb.TiDB, testdb.MySQL} {
		t.Run(kind, func(t *testing.T) {
			tg := testdb.Get(t, kind)
			if !tg.Dialect.Supports(dialects.FencedWrite) {
				err := tg.DB.WithContext(lockplugin.WithFence(ctx, token(1))).Model(&account{ID: 1}).Update("balance", 1).Error
				isErr(t, err, lockplugin.ErrUnsupported)
				t.Logf("refused on %s, as documented", tg.Name)
				return
			}
			tg.Reset(t, &account{})
			for _, autocommit := range []bool{false, true} {
				db := tg.DB
				if autocommit {
					// No transaction around each write: TiDB's autocommit
					// statement is where it retries.
					db = tg.DB.Session(&gorm.Session{SkipDefaultTransaction: true})
				}
				round := func(fenced bool) (final account, staleErr error) {
					noErr(t, db.Exec("DELETE FROM i16_accounts").Error)
					noErr(t, db.Create(&account{ID: 1}).Error)
					noErr(t, db.Exec("UPDATE i16_accounts SET fence = 4 WHERE id = 1").Error)
					done := make(chan error, 1)
					go func() {
						slow := map[string]any{"balance": gorm.Expr("5 + SLEEP(0.5)")}
						if fenced {
							done <- db.WithContext(lockplugin.WithFence(ctx, token(5))).Model(&account{ID: 1}).Updates(slow).Error
							return
						}
						slow["fence"] = 5
						done <- db.Model(&account{ID: 1}).Updates(slow).Error
					}()
					time.Sleep(100 * time.Millisecond)
					began := time.Now()
					var err error
					if fenced {
						err = db.WithContext(lockplugin.WithFence(ctx, token(6))).Model(&account{ID: 1}).Update("balance", 6).Error
					} else {
						err = db.Model(&account{ID: 1}).Updates(map[string]any{"balance": 6, "fence": 6}).Error
					}
					noErr(t, err, "the newer write")
					newer := time.Since(began)
					staleErr = <-done
					t.Logf("the newer write took %v, the stale one ended %v after it began", newer, time.Since(began))
					noErr(t, db.First(&final, 1).Error)
					return final, staleErr
				}
				final, err := round(false)
				noErr(t, err, "unfenced stale write")
				t.Logf("%s autocommit=%v unfenced: final fence %d, balance %d", tg.Name, autocommit, final.Fence, final.Balance)
				if autocommit && tg.Dialect.Engine == dialects.TiDB && int64(final.Fence) != 5 {
					t.Fatalf("the unfenced baseline ended at fence %d, want 5 (the stale write last): the attack did not interleave", int64(final.Fence))
				}
				for r := 1; r <= 5; r++ {
					final, err := round(true)
					t.Logf("%s autocommit=%v fenced, round %d: stale write: %v; final fence %d, balance %d", tg.Name, autocommit, r, err, int64(final.Fence), final.Balance)
					want(t, int64(final.Fence) == 6 && final.Balance == 6, "round %d: final %+v, want fence 6, balance 6", r, final)
					switch {
					case errors.Is(err, lockplugin.ErrStaleFence):
					case err != nil:
						t.Fatalf("round %d: stale write: %v", r, err)
					case autocommit && tg.Dialect.Engine == dialects.TiDB:
						t.Fatalf("round %d: the stale write was reported done, and the row shows fence 6", r)
					}
				}
			}
		})
	}
}
