package main

import (
	"context"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/dialects"
)

// claimChecks are the scenarios of issue 13: the work queue through
// lockplugin.Claim, and on SQLite the row-lock scenarios with the plugin's
// SQLiteWriterLock option, which the default registration refuses.
func claimChecks() []check {
	return []check{
		{id: "claim", title: "work queue / lockplugin.Claim", run: func(ctx context.Context, e *env, cfg scenario.Config) (scenario.Result, error) {
			return scenario.ClaimQueue(ctx, e.db, cfg)
		}},
		{id: "sqlite-for-update", title: "lost update / FOR UPDATE, SQLiteWriterLock", run: func(ctx context.Context, e *env, cfg scenario.Config) (scenario.Result, error) {
			db, r := e.writerLocked("lost update / FOR UPDATE, SQLiteWriterLock")
			if db == nil {
				return r, nil
			}
			return scenario.LostUpdateForUpdate(ctx, db, cfg)
		}},
		{id: "sqlite-skip-locked", title: "work queue / SKIP LOCKED, SQLiteWriterLock", run: func(ctx context.Context, e *env, cfg scenario.Config) (scenario.Result, error) {
			db, r := e.writerLocked("work queue / SKIP LOCKED, SQLiteWriterLock")
			if db == nil {
				return r, nil
			}
			return scenario.SkipLockedQueue(ctx, db, cfg)
		}},
	}
}

// writerLocked returns the database with lockplugin registered with
// SQLiteWriterLock, or, on a database other than SQLite, a result saying
// why the scenario does not apply.
func (e *env) writerLocked(title string) (*gorm.DB, scenario.Result) {
	if e.writerLockDB == nil {
		return nil, scenario.Result{Scenario: title, Unsupported: (&dialects.UnsupportedError{
			Dialect: e.dialect.String(), Feature: string(dialects.WriterLock),
			Reason: "SQLiteWriterLock stands in for row locks on SQLite only; this database has its own (see for-update and skip-locked)",
		}).Error()}
	}
	return e.writerLockDB, scenario.Result{}
}

// openWriterLockDB opens a second pool on the SQLite database with the
// plugin's SQLiteWriterLock option.
func (e *env) openWriterLockDB(workers int) error {
	db, err := gorm.Open(e.database.dialector, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return fmt.Errorf("opening SQLite again for SQLiteWriterLock: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	sqlDB.SetMaxOpenConns(2*workers + 4)
	sqlDB.SetMaxIdleConns(2*workers + 4)
	if err := db.Use(lockplugin.New(lockplugin.SQLiteWriterLock())); err != nil {
		_ = sqlDB.Close()
		return err
	}
	e.writerLockDB = db
	return nil
}
