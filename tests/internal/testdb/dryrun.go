package testdb

import (
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

// DryRunNames lists the databases DryRun opens, the rows of the rendering
// tests: MySQL and MariaDB at the versions whose syntax differs.
var DryRunNames = []string{
	"postgres",
	"mysql-8.0.36", "mysql-5.7.44",
	"mariadb-10.11.6", "mariadb-10.5.23",
	"sqlserver", "sqlite", "oracle",
}

// DryRun opens a database by name, without any server, in DryRun mode with
// lockplugin registered, so a test can read the exact SQL a statement would
// send. Names are those of DryRunNames: the real dialectors for postgres,
// sqlserver and sqlite; the MySQL dialector reporting the version after the
// dash for "mysql-X" and "mariadb-X"; and for "oracle", the stand-in of
// internal/dryrun, since no GORM Oracle dialector can be had. edit, if
// given, adjusts the gorm.Config first (a fixed NowFunc, say).
func DryRun(t testing.TB, name string, edit ...func(*gorm.Config)) *gorm.DB {
	t.Helper()
	db := DryRunPlain(t, name, edit...)
	if err := db.Use(lockplugin.New()); err != nil {
		t.Fatalf("testdb: registering lockplugin on %s: %v", name, err)
	}
	return db
}

// DryRunPlain is DryRun without lockplugin: plain GORM, for the tests that
// show what happens when the plugin is missing.
func DryRunPlain(t testing.TB, name string, edit ...func(*gorm.Config)) *gorm.DB {
	t.Helper()
	cfg := &gorm.Config{DryRun: true, DisableAutomaticPing: true, SkipDefaultTransaction: true, Logger: logger.Discard}
	for _, e := range edit {
		e(cfg)
	}
	var d gorm.Dialector
	switch kind, version, _ := strings.Cut(name, "-"); kind {
	case "postgres":
		d = postgres.New(postgres.Config{DSN: "host=127.0.0.1 port=1 user=dry dbname=dry sslmode=disable"})
	case "mysql", "mariadb":
		if kind == "mariadb" {
			version += "-MariaDB"
		}
		d = mysql.New(mysql.Config{DSN: "dry@tcp(127.0.0.1:1)/dry", SkipInitializeWithVersion: true, ServerVersion: version})
	case "sqlserver":
		d = sqlserver.Open("sqlserver://dry@127.0.0.1:1?database=dry")
	case "sqlite":
		d = sqlite.Open("file::memory:")
	case "oracle":
		d = &dryrun.Dialector{DialectorName: "oracle"}
	default:
		t.Fatalf("testdb: no DryRun database %q", name)
	}
	db, err := gorm.Open(d, cfg)
	if err != nil {
		t.Fatalf("testdb: opening %s for DryRun: %v", name, err)
	}
	return db
}
