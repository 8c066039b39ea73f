package lockplugin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
)

// TestQuietLogger: through GORM's default logger at Warn level (what an
// application logs in production), lockplugin's expected answers print
// nothing, while any other error still prints as one; at Info level the
// answer is printed, naming the caller's file, not the wrapper's.
func TestQuietLogger(t *testing.T) {
	expected := map[string]error{
		"stale save":          &lockplugin.ConcurrencyError{Op: "update", Table: "t", Version: 1, Current: 2},
		"stale fence":         &lockplugin.StaleFenceError{Op: "update", Table: "t", Fence: 1, Current: 2},
		"NOWAIT refused":      fmt.Errorf("query: %w", lockplugin.ErrLockNotAvailable),
		"busy, wrapped twice": fmt.Errorf("a: %w", fmt.Errorf("b: %w", lockplugin.ErrBusy)),
	}
	unexpected := map[string]error{
		"driver error":   errors.New("no such table: t"),
		"not registered": lockplugin.ErrNotRegistered,
		"unsupported":    lockplugin.ErrUnsupported,
	}
	sql := func() (string, int64) { return "UPDATE t SET n=1", 0 }
	var buf bytes.Buffer
	inner := logger.New(log.New(&buf, "", 0), logger.Config{LogLevel: logger.Warn, SlowThreshold: time.Hour})
	baseline := inner
	lg := lockplugin.QuietLogger(inner)
	ctx := context.Background()
	for name, err := range expected {
		if !lockplugin.IsExpected(err) {
			t.Errorf("%s: IsExpected false", name)
		}
		buf.Reset()
		baseline.Trace(ctx, time.Now(), sql, err)
		if !strings.Contains(buf.String(), err.Error()) {
			t.Fatalf("%s: the default logger alone did not print it: %q", name, buf.String())
		}
		buf.Reset()
		lg.Trace(ctx, time.Now(), sql, err)
		if buf.Len() != 0 {
			t.Errorf("%s: printed at Warn level: %q", name, buf.String())
		}
	}
	for name, err := range unexpected {
		if lockplugin.IsExpected(err) {
			t.Errorf("%s: IsExpected true", name)
		}
		buf.Reset()
		lg.Trace(ctx, time.Now(), sql, err)
		if !strings.Contains(buf.String(), err.Error()) {
			t.Errorf("%s: not printed as an error: %q", name, buf.String())
		}
	}
	// Info level: the statement and the answer, naming this file.
	info := lg.LogMode(logger.Info)
	buf.Reset()
	info.Trace(ctx, time.Now(), sql, expected["stale save"])
	out := buf.String()
	if !strings.Contains(out, "UPDATE t SET n=1") || !strings.Contains(out, "expected answer") {
		t.Fatalf("at Info level: %q", out)
	}
	if !strings.Contains(out, "quietlogger_test.go") || strings.Contains(out, "quietlogger.gen.go") {
		t.Errorf("the line does not name the caller: %q", out)
	}
	// LogMode keeps the wrapper.
	buf.Reset()
	info.LogMode(logger.Warn).Trace(ctx, time.Now(), sql, expected["stale fence"])
	if buf.Len() != 0 {
		t.Errorf("LogMode dropped the wrapper: %q", buf.String())
	}
	if lockplugin.IsExpected(nil) {
		t.Error("IsExpected(nil)")
	}
}
