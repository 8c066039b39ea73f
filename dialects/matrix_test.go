package dialects_test

import (
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
)

func TestLockMatrix(t *testing.T) {
	md := dialects.LockMatrix().Markdown()
	for _, row := range []string{
		"| database | FOR UPDATE | FOR SHARE | NOWAIT | SKIP LOCKED | FOR UPDATE OF | FOR NO KEY UPDATE |",
		"| PostgreSQL | `FOR UPDATE` | `FOR SHARE` | yes | yes | yes | `FOR NO KEY UPDATE` |",
		"| MySQL 8.0.1+ | `FOR UPDATE` | `FOR SHARE` | yes | yes | yes | error |",
		"| MySQL 5.7 | `FOR UPDATE` | `LOCK IN SHARE MODE` | error | error | error | error |",
		"| MariaDB 10.6+ | `FOR UPDATE` | `LOCK IN SHARE MODE` | yes | yes | error | error |",
		"| MariaDB 10.3-10.5 | `FOR UPDATE` | `LOCK IN SHARE MODE` | yes | error | error | error |",
		"| Oracle | `FOR UPDATE` | error | yes | yes | error | error |",
		"| SQL Server | `WITH (UPDLOCK, ROWLOCK)` | `WITH (HOLDLOCK, ROWLOCK)` | `NOWAIT` table hint | `READPAST` table hint | hints on the named tables only | error |",
		"| SQLite | error | error | error | error | error | error |",
	} {
		if !strings.Contains(md, row+"\n") {
			t.Errorf("lock matrix lacks the row\n%s\nin\n%s", row, md)
		}
	}
	for _, p := range dialects.Profiles() {
		if p.Dialect.Kind == dialects.Unknown {
			t.Errorf("profile %q is not a known database", p.Label)
		}
	}
}

func TestMechanismMatrix(t *testing.T) {
	md := dialects.MechanismMatrix().Markdown()
	for _, row := range []string{
		"| PostgreSQL | yes | yes | yes | yes |",
		"| SQLite | error | error | yes | yes: writer lock taken up front |",
	} {
		if !strings.Contains(md, row+"\n") {
			t.Errorf("mechanism matrix lacks the row\n%s\nin\n%s", row, md)
		}
	}
}
