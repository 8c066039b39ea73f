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
	// version is not known.
	Major, Minor, Patch int
}

var versionNumbers = regexp.MustCompile(`(\d+)(?:\.(\d+))?(?:\.(\d+))?`)

// Of recognises the database behind db from its dialector. A dialector that
// lockplugin does not know yields a Dialect of Kind Unknown, for which every
// feature is unsupported.
func Of(db *gorm.DB) Dialect {
	if db == nil || db.Config == nil || db.Dialector == nil {
		return Dialect{}
	}
	return FromDialector(db.Dialector)
}

// FromDialector recognises the database from a GORM dialector.
func FromDialector(d gorm.Dialector) Dialect {
	if d == nil {
		return Dialect{}
	}
	key := [2]string{d.Name(), serverVersion(d)}
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
	case "postgres", "pgx", "postgresql", "cockroachdb":
		if strings.ToLower(dialectorName) != "cockroachdb" {
			dl.Kind = Postgres
		}
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

// IsMySQLFamily reports whether the database is MySQL or MariaDB, which
// share a dialector and most SQL.
func (d Dialect) IsMySQLFamily() bool { return d.Kind == MySQL || d.Kind == MariaDB }
