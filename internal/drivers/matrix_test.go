package drivers_test

import (
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/internal/drivers"
)

const (
	ofOnlyTable = "error, except OF the query's one table (sent without OF)"
	writerLock  = "error (opt-in: writer lock)"
	waitN       = "`WAIT n` (seconds, rounded up)"
	mySession   = "`SET SESSION innodb_lock_wait_timeout, lock_wait_timeout`, restored after"
)

func TestLockMatrix(t *testing.T) {
	md := drivers.LockMatrix().Markdown()
	for _, row := range []string{
		"| database | FOR UPDATE | FOR SHARE | NOWAIT | SKIP LOCKED | FOR UPDATE OF | WaitAtMost | FOR NO KEY UPDATE |",
		"| PostgreSQL | `FOR UPDATE` | `FOR SHARE` | yes | yes | yes | `SET LOCAL lock_timeout`, restored after | `FOR NO KEY UPDATE` |",
		"| MySQL 8.0.1+ | `FOR UPDATE` | `FOR SHARE` | yes | yes | yes | " + mySession + " | error |",
		"| MySQL 5.7 | `FOR UPDATE` | `LOCK IN SHARE MODE` | error | error | " + ofOnlyTable + " | " + mySession + " | error |",
		"| MariaDB 10.6+ | `FOR UPDATE` | `LOCK IN SHARE MODE` | yes | yes | " + ofOnlyTable + " | " + waitN + " | error |",
		"| MariaDB 10.3-10.5 | `FOR UPDATE` | `LOCK IN SHARE MODE` | yes | error | " + ofOnlyTable + " | " + waitN + " | error |",
		"| Oracle | `FOR UPDATE` | error | yes | yes | " + ofOnlyTable + " | " + waitN + " | error |",
		"| SQL Server | `WITH (XLOCK, ROWLOCK)` | `WITH (REPEATABLEREAD, ROWLOCK)` | `NOWAIT` table hint | `READPAST` table hint | hints on the named tables only | `SET LOCK_TIMEOUT`, restored after | error |",
		"| SQLite | " + strings.Repeat(writerLock+" | ", 5) + "error | error |",
		"| TiDB | `FOR UPDATE` | error | yes | error | yes | " + waitN + " | error |",
		"| CockroachDB | `FOR UPDATE` | error | yes | error | yes | error | error |",
		"| YugabyteDB | `FOR UPDATE` | error | yes | error | " + ofOnlyTable + " | error | error |",
	} {
		if !strings.Contains(md, row+"\n") {
			t.Errorf("lock matrix lacks the row\n%s\nin\n%s", row, md)
		}
	}
}
