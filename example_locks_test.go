package lockplugin_test

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

// Job is a row of a work queue.
type Job struct {
	ID    uint
	State string
}

// One lock, written once, rendered for each database (here through GORM's
// DryRun on stand-in dialectors, so the example runs without a server).
func ExampleForUpdate() {
	for _, d := range []struct{ name, version string }{
		{"postgres", ""}, {"mysql", "10.11.6-MariaDB"}, {"sqlserver", ""}, {"sqlite", ""},
	} {
		db, _ := dryrun.Open(d.name, d.version)
		_ = db.Use(lockplugin.New())

		var jobs []Job
		tx := db.Clauses(lockplugin.ForUpdate(lockplugin.SkipLocked)).Where("state = ?", "queued").Find(&jobs)
		if errors.Is(tx.Error, lockplugin.ErrUnsupported) {
			fmt.Println(tx.Error)
			continue
		}
		fmt.Println(tx.Statement.SQL.String())
	}
	// Output:
	// SELECT * FROM "jobs" WHERE state = $1 FOR UPDATE SKIP LOCKED
	// SELECT * FROM `jobs` WHERE state = ? FOR UPDATE SKIP LOCKED
	// SELECT * FROM [jobs] WITH (XLOCK, ROWLOCK, READPAST) WHERE state = @p1
	// lockplugin: FOR UPDATE is not supported on SQLite (SQLite has no row locks; lockplugin.New(lockplugin.SQLiteWriterLock()) makes such reads take the database's writer lock instead)
}

// MariaDB has no FOR SHARE: the share lock is phrased LOCK IN SHARE MODE,
// and its options are kept.
func ExampleForShare() {
	db, _ := dryrun.Open("mysql", "10.11.6-MariaDB")
	_ = db.Use(lockplugin.New())

	var job Job
	tx := db.Clauses(lockplugin.ForShare(lockplugin.NoWait)).Where("id = ?", 7).Find(&job)
	fmt.Println(tx.Statement.SQL.String())
	// Output:
	// SELECT * FROM `jobs` WHERE id = ? LOCK IN SHARE MODE NOWAIT
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

// A query built with a lock can be reused without it.
func ExampleNoLock() {
	db, _ := dryrun.Open("postgres", "")
	_ = db.Use(lockplugin.New())

	queued := db.Clauses(lockplugin.ForUpdate()).Where("state = ?", "queued").Session(&gorm.Session{})
	var n int64
	tx := queued.Clauses(lockplugin.NoLock()).Model(&Job{}).Count(&n)
	fmt.Println(tx.Statement.SQL.String())
	// Output:
	// SELECT count(*) FROM "jobs" WHERE state = $1
}
