package lockplugin_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
)

// A stale save is an answer the application handles, not an error to log
// in red: QuietLogger hands it to the inner logger as a successful
// statement plus an Info line. GORM calls Trace like this after every
// statement; in an application:
//
//	gorm.Open(dialector, &gorm.Config{Logger: lockplugin.QuietLogger(logger.Default)})
func ExampleQuietLogger() {
	lg := lockplugin.QuietLogger(levelPrinter{})
	ctx := context.Background()

	stale := &lockplugin.ConcurrencyError{Op: "update", Table: "accounts", PrimaryKey: []any{1}, Version: 1, Current: 2}
	lg.Trace(ctx, time.Now(), func() (string, int64) {
		return "UPDATE accounts SET balance=95,version=2 WHERE id = 1 AND version = 1", 0
	}, stale)
	lg.Trace(ctx, time.Now(), func() (string, int64) { return "UPDATE acounts SET balance=95", 0 }, errors.New("no such table: acounts"))
	// Output:
	// sql:   UPDATE accounts SET balance=95,version=2 WHERE id = 1 AND version = 1
	// info:  lockplugin: expected answer, not an error: lockplugin: concurrent modification: stale update of accounts (primary key 1) read at version 1; the row is now at version 2
	// error: no such table: acounts: UPDATE acounts SET balance=95
}

// levelPrinter is a GORM logger that prints each call with its level.
type levelPrinter struct{}

func (p levelPrinter) LogMode(logger.LogLevel) logger.Interface { return p }
func (levelPrinter) Info(_ context.Context, msg string, args ...any) {
	fmt.Printf("info:  "+msg+"\n", args...)
}
func (levelPrinter) Warn(_ context.Context, msg string, args ...any) {
	fmt.Printf("warn:  "+msg+"\n", args...)
}
func (levelPrinter) Error(_ context.Context, msg string, args ...any) {
	fmt.Printf("error: "+msg+"\n", args...)
}
func (levelPrinter) Trace(_ context.Context, _ time.Time, fc func() (string, int64), err error) {
	sql, _ := fc()
	if err != nil {
		fmt.Printf("error: %v: %s\n", err, sql)
		return
	}
	fmt.Printf("sql:   %s\n", sql)
}
