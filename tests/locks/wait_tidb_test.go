package locks

import (
	"testing"

	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// TestWaitAtMostLiveTiDB is TestWaitAtMostLive on TiDB, where WaitAtMost
// is FOR UPDATE WAIT n (TiDB ignores the SET_VAR hint for
// innodb_lock_wait_timeout): the waiter fails with ErrLockNotAvailable
// after about the bound, an unbounded one is still waiting at twice it, and
// the session's settings are unchanged.
func TestWaitAtMostLiveTiDB(t *testing.T) {
	runWaitLive(t, testdb.Get(t, testdb.TiDB))
}
