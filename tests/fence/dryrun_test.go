package fence_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestI16FencedSQL: the exact statements a fenced write sends, on every
// dialect (no server): the UPDATE sets the fence and is guarded by
// "fence <= ?", the DELETE is guarded, the INSERT writes the fence, all
// as bind parameters; an unfenced write of the same model is untouched.
func TestI16FencedSQL(t *testing.T) {
	ctx := context.Background()
	for _, name := range testdb.DryRunNames {
		t.Run(name, func(t *testing.T) {
			db := testdb.DryRun(t, name).WithContext(lockplugin.WithFence(ctx, token(7)))
			upd := db.Save(&account{ID: 1, Balance: 2})
			noErr(t, upd.Error)
			sql := upd.Statement.SQL.String()
			want(t, strings.Count(sql, "fence") == 2 && strings.Contains(sql, "<="), "UPDATE: %s", sql)
			want(t, len(upd.Statement.Vars) >= 3 && upd.Statement.Vars[len(upd.Statement.Vars)-1] == int64(7), "UPDATE vars %v", upd.Statement.Vars)
			del := db.Delete(&account{ID: 1})
			noErr(t, del.Error)
			sql = del.Statement.SQL.String()
			want(t, strings.Contains(sql, "fence") && strings.Contains(sql, "<="), "DELETE: %s", sql)
			ins := db.Create(&account{Balance: 1})
			noErr(t, ins.Error)
			want(t, strings.Contains(ins.Statement.SQL.String(), "fence"), "INSERT: %s", ins.Statement.SQL.String())
			plain := testdb.DryRun(t, name).Save(&account{ID: 1, Balance: 2})
			noErr(t, plain.Error)
			want(t, !strings.Contains(plain.Statement.SQL.String(), "<="), "unfenced UPDATE guarded: %s", plain.Statement.SQL.String())
			t.Logf("%s: %s", name, upd.Statement.SQL.String())
		})
	}
}
