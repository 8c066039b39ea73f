package lockplugin_test

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
)

// Job is a row of a work queue.
type Job struct {
	ID    uint
	State string
}

// One lock, written once, rendered for the database behind db:
// FOR UPDATE SKIP LOCKED on PostgreSQL, MySQL 8 and MariaDB 10.6+, table
// hints (XLOCK, ROWLOCK, READPAST) on SQL Server, and ErrUnsupported before
// any SQL where the database cannot lock rows (SQLite without
// SQLiteWriterLock). Session{DryRun: true} shows the SQL without sending it.
func ExampleForUpdate() {
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())

	var jobs []Job
	tx := db.Session(&gorm.Session{DryRun: true}).
		Clauses(lockplugin.ForUpdate(lockplugin.SkipLocked)).Where("state = ?", "queued").Find(&jobs)
	if errors.Is(tx.Error, lockplugin.ErrUnsupported) {
		fmt.Println(tx.Error) // names the database, the lock and what to do instead
		return
	}
	fmt.Println(tx.Statement.SQL.String())
}

// MariaDB has no FOR SHARE: there the share lock is phrased LOCK IN SHARE
// MODE, and its options are kept (LOCK IN SHARE MODE NOWAIT).
func ExampleForShare() {
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())

	err := db.Transaction(func(tx *gorm.DB) error {
		var job Job
		return tx.Clauses(lockplugin.ForShare(lockplugin.NoWait)).Where("id = ?", 7).Find(&job).Error
	})
	if errors.Is(err, lockplugin.ErrLockNotAvailable) {
		fmt.Println("job 7 is locked for update by someone else")
	}
}

// Claiming a batch of jobs from a queue: each worker locks up to ten
// queued jobs that no other worker holds, marks them, and commits.
func ExampleSkipLocked() {
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())
	ctx := context.Background()

	var jobs []Job
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Clauses(lockplugin.ForUpdate(lockplugin.SkipLocked)).
			Where("state = ?", "queued").Order("id").Limit(10).Find(&jobs).Error
		if err != nil || len(jobs) == 0 {
			return err
		}
		ids := make([]uint, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		return tx.Model(&Job{}).Where("id IN ?", ids).Update("state", "running").Error
	})
	if err != nil {
		fmt.Println(err)
	}
}

// NOWAIT turns "someone else holds this row" into an ordinary answer
// instead of a wait.
func ExampleNoWait() {
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())

	err := db.Transaction(func(tx *gorm.DB) error {
		var job Job
		return tx.Clauses(lockplugin.ForUpdate(lockplugin.NoWait)).First(&job, 42).Error
	})
	if errors.Is(err, lockplugin.ErrLockNotAvailable) {
		fmt.Println("job 42 is being worked on; try another")
	}
}

// The generics API takes the lock with the other clauses.
func ExampleForUpdate_generics() {
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())
	ctx := context.Background()

	_ = db.Transaction(func(tx *gorm.DB) error {
		jobs, err := gorm.G[Job](tx, lockplugin.ForUpdate(lockplugin.SkipLocked)).
			Where("state = ?", "queued").Limit(10).Find(ctx)
		fmt.Println(len(jobs))
		return err
	})
}

// A query built with a lock can be reused without it. Session makes the
// built query reusable: without it, the first use would consume the
// statement (and its lock) and the second would start from what is left.
func ExampleNoLock() {
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())

	_ = db.Transaction(func(tx *gorm.DB) error {
		queued := tx.Model(&Job{}).Clauses(lockplugin.ForUpdate()).Where("state = ?", "queued").Session(&gorm.Session{})
		var n int64
		if err := queued.Clauses(lockplugin.NoLock()).Count(&n).Error; err != nil { // no lock: PostgreSQL refuses FOR UPDATE on count(*)
			return err
		}
		var jobs []Job
		return queued.Limit(int(n)).Find(&jobs).Error // still locked
	})
}
