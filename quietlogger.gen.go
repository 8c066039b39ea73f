package lockplugin

// This file is written by hand. Its name ends in .gen.go because GORM's
// logger, looking for the file:line to print (gorm/utils.CallerFrame),
// skips GORM's own files and *.gen.go files: under another name every line
// logged through QuietLogger would name this file instead of the
// application's call.

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// QuietLogger wraps a GORM logger so that lockplugin's expected answers are
// not logged as errors. GORM hands every statement's error to its logger's
// Trace, and its default logger prints each one as a red error line: every
// refused stale save (ErrConcurrency), every refused stale fenced write
// (ErrStaleFence) and every row lock refused under NOWAIT or a bounded wait
// (ErrLockNotAvailable, which matches ErrBusy). Those are answers the
// application handles, not failures. QuietLogger passes such a statement
// to inner as a successful one (its SQL is shown at Info level, and a slow
// one still warns), followed by the answer at Info level; every other error
// reaches inner unchanged.
//
// holds.ErrFull, lease.ErrNotAcquired and advisory.ErrTimeout are returned
// by lockplugin's own code after statements that succeeded, so GORM's
// logger never sees them; they match ErrBusy, so a wrapped one that an
// application passes through GORM (db.AddError) is quiet too.
//
//	db, err := gorm.Open(dialector, &gorm.Config{
//		Logger: lockplugin.QuietLogger(logger.Default),
//	})
func QuietLogger(inner logger.Interface) logger.Interface {
	return quietLogger{inner: inner}
}

// IsExpected reports whether err is one of lockplugin's expected answers,
// the ones QuietLogger logs at Info level: it matches ErrConcurrency,
// ErrStaleFence or ErrBusy.
func IsExpected(err error) bool {
	return err != nil && (errors.Is(err, ErrConcurrency) || errors.Is(err, ErrStaleFence) || errors.Is(err, ErrBusy))
}

type quietLogger struct{ inner logger.Interface }

// LogMode keeps the wrapper around the inner logger at its new level.
func (l quietLogger) LogMode(level logger.LogLevel) logger.Interface {
	return quietLogger{inner: l.inner.LogMode(level)}
}

func (l quietLogger) Info(ctx context.Context, msg string, args ...any) {
	l.inner.Info(ctx, msg, args...)
}

func (l quietLogger) Warn(ctx context.Context, msg string, args ...any) {
	l.inner.Warn(ctx, msg, args...)
}

func (l quietLogger) Error(ctx context.Context, msg string, args ...any) {
	l.inner.Error(ctx, msg, args...)
}

func (l quietLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	if !IsExpected(err) {
		l.inner.Trace(ctx, begin, fc, err)
		return
	}
	l.inner.Trace(ctx, begin, fc, nil)
	l.inner.Info(ctx, "lockplugin: expected answer, not an error: %v", err)
}

// ParamsFilter keeps the inner logger's filter of the SQL parameters it
// shows (logger.Config.ParameterizedQueries).
func (l quietLogger) ParamsFilter(ctx context.Context, sql string, params ...any) (string, []any) {
	if f, ok := l.inner.(gorm.ParamsFilter); ok {
		return f.ParamsFilter(ctx, sql, params...)
	}
	return sql, params
}
