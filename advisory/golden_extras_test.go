package advisory

import (
	"github.com/lockplugin/lockplugin/dialects"
)

type namedStatement struct {
	name string
	st   statement
}

// goldenExtras are the statements built outside the plans: clearing a
// session's holds, killing a cancelled wait, releasing by handle.
func goldenExtras(d dialects.Dialect) []namedStatement {
	switch d.Kind {
	case dialects.Postgres:
		return []namedStatement{{"clear: count holds", pgHolds(PostgresKey("Adv-Job"))}}
	case dialects.MySQL, dialects.MariaDB:
		return []namedStatement{{"kill a cancelled wait", myKill(42)}}
	case dialects.SQLServer:
		return []namedStatement{{"clear: release all", msClear("Adv-Job", maxClears)}}
	case dialects.Oracle:
		return []namedStatement{{"release by handle", oracleRelease("10737418241073741824187")}}
	}
	return nil
}
