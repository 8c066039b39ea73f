// Package dialects knows the databases lockplugin runs on: how to recognise
// each one from a *gorm.DB, what it supports, and how to read its errors.
//
// Every other lockplugin package asks this one instead of comparing
// dialector names itself, so that a database's behaviour is decided in one
// place. It imports no SQL driver: versions are read from the dialector the
// application opened, and errors are classified through the methods and
// fields that drivers expose.
package dialects

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"gorm.io/gorm"
)

// Kind identifies a database product.
type Kind string

// The database products lockplugin recognises.
const (
	Unknown   Kind = ""
	Postgres  Kind = "postgres"
	MySQL     Kind = "mysql"
	MariaDB   Kind = "mariadb"
	SQLServer Kind = "sqlserver"
	Oracle    Kind = "oracle"
	SQLite    Kind = "sqlite"
)

// Dialect describes the database behind a *gorm.DB.
type Dialect struct {
	// Kind is the database product; Unknown when the dialector is not one
	// lockplugin knows.
	Kind Kind
	// Dialector is the name the GORM dialector reports.
	Dialector string
	// Version is the server version as reported by the dialector (for
	// MySQL and MariaDB, the result of SELECT VERSION()), or "" when the
	// dialector does not report one.
	Version string
	// Major, Minor and Patch are parsed from Version; all zero when the
	// version is not known. For an Engine they are the version of the
	// protocol it imitates (TiDB's "8.0.11"), which decides how statements
	// are phrased.
	Major, Minor, Patch int
	// Engine is the product behind a look-alike of Kind (TiDB, CockroachDB,
	// YugabyteDB), told from the server's version string; NoEngine for the
	// real thing. An Engine has its own rows in the capability matrix.
	Engine Engine
	// EngineVersion is the engine's own version ("8.4.0" for TiDB v8.4.0).
	EngineVersion string
}

var versionNumbers = regexp.MustCompile(`(\d+)(?:\.(\d+))?(?:\.(\d+))?`)

// Of recognises the database behind db from its dialector and, where the
// dialector cannot tell a look-alike from the real thing (PostgreSQL's
// reports no version; MySQL's none with SkipInitializeWithVersion), from
// the server: it asks version() once per connection pool, on first use, and
// remembers the answer (see Forget). A dialector that lockplugin does not
// know yields a Dialect of Kind Unknown, for which every feature is
// unsupported.
func Of(db *gorm.DB) Dialect {
	if db == nil || db.Config == nil || db.Dialector == nil {
		return Dialect{}
	}
	dl := FromDialector(db.Dialector)
	if !asksServer(dl) {
		return dl
	}
	if v := serverVersionOf(db); v != "" {
		return newCached(dl.Dialector, v)
	}
	return dl
}

// FromDialector recognises the database from a GORM dialector.
func FromDialector(d gorm.Dialector) Dialect {
	if d == nil {
		return Dialect{}
	}
	return newCached(d.Name(), serverVersion(d))
}

func newCached(name, version string) Dialect {
	key := [2]string{name, version}
	if dl, ok := parsed.Load(key); ok {
		return dl.(Dialect)
	}
	dl := New(key[0], key[1])
	parsed.Store(key, dl)
	return dl
}

// parsed and versionField memoise pure functions of their keys (a name and
// version pair; a dialector type), so Of costs a map lookup per statement.
// They hold derived data only: nothing a test would need to reset.
var parsed, versionField sync.Map

// New builds a Dialect from a dialector name and a server version string.
// It is exported for tools and tests that describe a database without
// opening one; applications use Of.
func New(dialectorName, version string) Dialect {
	dl := Dialect{Dialector: dialectorName, Version: version}
	switch strings.ToLower(dialectorName) {
	case "postgres", "pgx", "postgresql":
		dl.Kind = Postgres
	case "cockroachdb":
		dl.Kind, dl.Engine = Postgres, CockroachDB
	case "mysql":
		dl.Kind = MySQL
		if strings.Contains(strings.ToLower(version), "mariadb") {
			dl.Kind = MariaDB
		}
	case "sqlserver", "mssql":
		dl.Kind = SQLServer
	case "oracle", "godror":
		dl.Kind = Oracle
	case "sqlite", "sqlite3":
		dl.Kind = SQLite
	}
	if m := versionNumbers.FindStringSubmatch(version); m != nil {
		dl.Major, _ = strconv.Atoi(m[1])
		dl.Minor, _ = strconv.Atoi(m[2])
		dl.Patch, _ = strconv.Atoi(m[3])
	}
	if dl.Kind == Postgres || dl.Kind == MySQL {
		if e, v := engineOf(version); e != NoEngine {
			dl.Engine, dl.EngineVersion = e, v
		}
	}
	// MariaDB behind a MySQL 5.5 compatibility prefix ("5.5.5-10.11.6-MariaDB").
	if dl.Kind == MariaDB && dl.Major == 5 && dl.Minor == 5 {
		if i := strings.Index(version, "-"); i >= 0 {
			if m := versionNumbers.FindStringSubmatch(version[i+1:]); m != nil {
				dl.Major, _ = strconv.Atoi(m[1])
				dl.Minor, _ = strconv.Atoi(m[2])
				dl.Patch, _ = strconv.Atoi(m[3])
			}
		}
	}
	return dl
}

// serverVersion reads a ServerVersion string field from a dialector (the
// MySQL dialector keeps the SELECT VERSION() result there) without importing
// any driver.
func serverVersion(d gorm.Dialector) string {
	v := reflect.ValueOf(d)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	idx, ok := versionField.Load(v.Type())
	if !ok {
		var path []int
		if f, found := v.Type().FieldByName("ServerVersion"); found && f.Type.Kind() == reflect.String {
			path = f.Index
		}
		idx, _ = versionField.LoadOrStore(v.Type(), path)
	}
	path := idx.([]int)
	if path == nil {
		return ""
	}
	f, err := v.FieldByIndexErr(path)
	if err != nil {
		return ""
	}
	return f.String()
}

// AtLeast reports whether the server version is at least major.minor.patch.
// An unknown version (all zero) is never at least anything above 0.0.0.
func (d Dialect) AtLeast(major, minor, patch int) bool {
	if d.Major != major {
		return d.Major > major
	}
	if d.Minor != minor {
		return d.Minor > minor
	}
	return d.Patch >= patch
}

// VersionKnown reports whether the dialector reported a server version.
func (d Dialect) VersionKnown() bool { return d.Major != 0 }

// String names the database for error messages: "PostgreSQL",
// "MariaDB 10.11.6", "unknown dialect \"clickhouse\"".
func (d Dialect) String() string {
	if label, ok := engineLabels[d.Engine]; ok {
		if d.EngineVersion != "" {
			return label + " " + d.EngineVersion
		}
		return label
	}
	var s string
	switch d.Kind {
	case Postgres:
		s = "PostgreSQL"
	case MySQL:
		s = "MySQL"
	case MariaDB:
		s = "MariaDB"
	case SQLServer:
		s = "SQL Server"
	case Oracle:
		s = "Oracle"
	case SQLite:
		s = "SQLite"
	default:
		return fmt.Sprintf("unknown dialect %q", d.Dialector)
	}
	if (d.Kind == MySQL || d.Kind == MariaDB) && d.VersionKnown() {
		s += fmt.Sprintf(" %d.%d.%d", d.Major, d.Minor, d.Patch)
	}
	return s
}

// IsMySQLFamily reports whether the database speaks MySQL's SQL: MySQL,
// MariaDB, and TiDB (an Engine of Kind MySQL), which share a dialector and
// most SQL.
func (d Dialect) IsMySQLFamily() bool { return d.Kind == MySQL || d.Kind == MariaDB }
