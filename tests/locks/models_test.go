package locks

import (
	"testing"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/tests/internal/testdb"
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

// openDry opens the named DryRun database (testdb.DryRunNames) with
// lockplugin registered.
func openDry(t testing.TB, name string) *gorm.DB { return testdb.DryRun(t, name) }
