package advisory

import (
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// The statements the tests look for, built by the databases' families as
// the package builds them.
var (
	testPG     = dialects.New("postgres", "")
	testMS     = dialects.New("sqlserver", "")
	testOracle = dialects.New("oracle", "")
	testMySQL  = dialects.New("mysql", "8.0.36")
	testTiDB   = dialects.New("mysql", "8.0.11-TiDB-v8.4.0")
)

// pgHolds counts the session's holds of name (the clear step).
func pgHolds(name string) statement { return stmt(family(testPG).Clear(name, maxClears)) }

// pgTimedLockSQL is a bounded (or lock_timeout-overriding) wait's text.
func pgTimedLockSQL() string {
	return stmt(family(testPG).Session("n", sqldriver.AdvisoryWait{D: 1}).Steps[0]).sql
}

func msClear(name string, max int) statement { return stmt(family(testMS).Clear(name, max)) }

func oracleLock(name string, w wait) statement {
	return stmt(family(testOracle).Session(name, w.sd()).Steps[0])
}

func oracleRelease(handle string) statement { return stmt(family(testOracle).ReleaseHandle(handle)) }

func myKill(id int64) statement { return stmt(family(testMySQL).Kill(id)) }
