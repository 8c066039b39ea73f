package locks

import (
	"errors"
	"fmt"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestLockModesConflict is the conflict table of ForUpdate and ForShare,
// on every server, each cell asked with NoWait so that "blocked" is exact:
// a request that would wait fails at once with ErrLockNotAvailable. On SQL
// Server it is the reason ForUpdate is XLOCK and ForShare REPEATABLEREAD:
// with UPDLOCK and HOLDLOCK, ForShare beside a ForUpdate holder (and
// ForUpdate beside a ForShare holder) were admitted, since U and S locks
// are compatible both ways.
func TestLockModesConflict(t *testing.T) {
	mode := map[string]func(...lockplugin.LockOption) clause.Expression{
		"ForUpdate": lockplugin.ForUpdate,
		"ForShare":  lockplugin.ForShare,
	}
	cells := []struct {
		held, asked string
		admitted    bool
	}{
		{"ForUpdate", "ForUpdate", false},
		{"ForUpdate", "ForShare", false},
		{"ForShare", "ForUpdate", false},
		{"ForShare", "ForShare", true},
	}
	eachServer(t, func(t *testing.T, tg *testdb.Target) {
		for _, c := range cells {
			t.Run(c.held+" held, "+c.asked+" asked", func(t *testing.T) {
				ctx := liveContext(t)
				holder := begin(t, ctx, tg.DB)
				var r lkRow
				if err := holder.Clauses(mode[c.held]()).First(&r, 1).Error; err != nil {
					t.Fatal(err)
				}
				err := tg.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
					return tx.Clauses(mode[c.asked](lockplugin.NoWait)).First(&r, 1).Error
				})
				switch {
				case c.admitted && err != nil:
					t.Fatalf("%s should be admitted beside %s: %v", c.asked, c.held, err)
				case !c.admitted && !errors.Is(err, lockplugin.ErrLockNotAvailable):
					t.Fatalf("%s beside %s: want ErrLockNotAvailable, got %v", c.asked, c.held, fmt.Sprint(err))
				}
			})
		}
	})
}
