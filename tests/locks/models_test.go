package locks

import (
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

// lkCompany and lkJob are the rendering tests' models: a job belongs to a
// company, for the JOIN cases.
type lkCompany struct {
	ID   uint
	Name string
}

func (lkCompany) TableName() string { return "lk_companies" }

type lkJob struct {
	ID        uint
	State     string
	CompanyID uint
	Company   lkCompany
}

func (lkJob) TableName() string { return "lk_jobs" }

// lkRow is the live tests' model: rows 1..4 with a value.
type lkRow struct {
	ID int64 `gorm:"primaryKey;autoIncrement:false"`
	N  int64 `gorm:"not null"`
}

func (lkRow) TableName() string { return "lk_rows" }

// dryDialects opens, without any server, every dialector the rendering
// matrix covers, in DryRun mode with lockplugin registered.
type dryDialect struct {
	name string
	open func() (*gorm.DB, error)
}

func dryConfig() *gorm.Config {
	return &gorm.Config{DryRun: true, DisableAutomaticPing: true, Logger: logger.Discard}
}

func dryMySQL(version string) func() (*gorm.DB, error) {
	return func() (*gorm.DB, error) {
		return gorm.Open(mysql.New(mysql.Config{
			DSN:                       "lk@tcp(127.0.0.1:1)/lk",
			SkipInitializeWithVersion: true,
			ServerVersion:             version,
		}), dryConfig())
	}
}

var dryDialects = []dryDialect{
	{"postgres", func() (*gorm.DB, error) {
		return gorm.Open(postgres.New(postgres.Config{DSN: "host=127.0.0.1 port=1 dbname=lk"}), dryConfig())
	}},
	{"mysql-8.0.36", dryMySQL("8.0.36")},
	{"mysql-5.7.44", dryMySQL("5.7.44")},
	{"mariadb-10.11.6", dryMySQL("10.11.6-MariaDB")},
	{"mariadb-10.5.23", dryMySQL("10.5.23-MariaDB")},
	{"sqlserver", func() (*gorm.DB, error) { return gorm.Open(sqlserver.Open("sqlserver://lk@127.0.0.1:1"), dryConfig()) }},
	{"sqlite", func() (*gorm.DB, error) { return gorm.Open(sqlite.Open("file::memory:"), dryConfig()) }},
	{"oracle", func() (*gorm.DB, error) { return dryrun.Open("oracle", "") }},
}

// openDry opens the named DryRun database with lockplugin registered.
func openDry(t testing.TB, name string) *gorm.DB {
	t.Helper()
	for _, d := range dryDialects {
		if d.name != name {
			continue
		}
		db, err := d.open()
		if err != nil {
			t.Fatalf("opening %s for DryRun: %v", name, err)
		}
		if err := db.Use(lockplugin.New()); err != nil {
			t.Fatalf("registering lockplugin on %s: %v", name, err)
		}
		return db
	}
	t.Fatalf("no DryRun dialect %q", name)
	return nil
}
