package advisory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
)

// TestZeroValues calls every method of a zero Lock and of a nil *Lock:
// each returns an error naming Acquire, none panics, and a statement run
// on DB reaches no database.
func TestZeroValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    *Lock
	}{
		{"zero", &Lock{}},
		{"nil", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.l.Release(context.Background()); !errors.Is(err, errZeroLock) || !strings.Contains(err.Error(), "advisory.Acquire") {
				t.Errorf("Release = %v, want an error naming advisory.Acquire", err)
			}
			//lint:ignore SA1012 a nil ctx must not panic either
			if err := tc.l.Release(nil); !errors.Is(err, errZeroLock) {
				t.Errorf("Release(nil) = %v, want errZeroLock", err)
			}
			if got := tc.l.Name(); got != "" {
				t.Errorf("Name = %q, want empty", got)
			}
			var n int
			if err := tc.l.DB().Raw("SELECT 1").Scan(&n).Error; !errors.Is(err, errZeroLock) {
				t.Errorf("DB().Raw.Scan = %v, want errZeroLock", err)
			}
			if err := tc.l.DB().Exec("SELECT 1").Error; !errors.Is(err, errZeroLock) {
				t.Errorf("DB().Exec = %v, want errZeroLock", err)
			}
			type row struct{ ID int }
			var r row
			if err := tc.l.DB().Where("id = ?", 1).First(&r).Error; !errors.Is(err, errZeroLock) {
				t.Errorf("DB().First = %v, want errZeroLock", err)
			}
			// GORM joins a second error to the first as text.
			if err := tc.l.DB().Transaction(func(tx *gorm.DB) error { return nil }); err == nil || !strings.Contains(err.Error(), "advisory.Acquire") {
				t.Errorf("DB().Transaction = %v, want an error naming advisory.Acquire", err)
			}
		})
	}
}

// TestOptions: a nil Option is ignored, WaitAtMost(0) tries once, no
// option waits indefinitely, the deprecated Timeout is WaitAtMost, and a
// negative bound is the call's error.
func TestOptions(t *testing.T) {
	o, err := buildOptions([]Option{nil, WaitAtMost(0), nil})
	if err != nil || !o.wait.tryOnce() {
		t.Fatalf("nil options around WaitAtMost(0): %+v, %v", o, err)
	}
	if o, err := buildOptions(nil); err != nil || !o.wait.forever {
		t.Fatalf("no option: %+v, %v; want an indefinite wait", o, err)
	}
	if o, err := buildOptions([]Option{Timeout(time.Second)}); err != nil || o.wait.forever || o.wait.d != time.Second {
		t.Fatalf("Timeout(1s): %+v, %v; want WaitAtMost(1s)", o, err)
	}
	if _, err := buildOptions([]Option{nil, WaitAtMost(-time.Second)}); err == nil || !strings.Contains(err.Error(), "WaitAtMost") {
		t.Fatalf("WaitAtMost(-1s): %v, want an error naming WaitAtMost", err)
	}
}
