package advisory

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/internal/lockerr"
)

// TestLockErrorMessages: a lock's error names the lock and the database
// once, says "advisory:" once, keeps every byte of the cause, and matches
// the sentinels it carries (ErrTimeout also matches lockplugin.ErrBusy).
func TestLockErrorMessages(t *testing.T) {
	d := dialectOf(t, "postgres", "15.0")
	driver := errors.New("ERROR: canceling statement due to lock timeout (SQLSTATE 55P03)")
	for _, tc := range []struct {
		err      error
		want     string
		matches  []error
		excludes []error
	}{
		{ErrTimeout, `advisory: not acquired within the wait: lock "job" on DB`, []error{ErrTimeout, lockerr.ErrBusy}, []error{ErrNotHeld}},
		{answer(ErrTimeout, " ("+driver.Error()+")"), `advisory: not acquired within the wait: lock "job" on DB (` + driver.Error() + `)`, []error{ErrTimeout, lockerr.ErrBusy}, nil},
		{answer(ErrNotHeld, ": sp_releaseapplock returned -999"), `advisory: not held at release: lock "job" on DB: sp_releaseapplock returned -999`, []error{ErrNotHeld}, []error{lockerr.ErrBusy}},
		{ErrReentrant, `advisory: already held by this call chain (advisory locks are not re-entrant): lock "job" on DB`, []error{ErrReentrant}, []error{lockerr.ErrBusy}},
		{context.Canceled, `advisory: lock "job" on DB: context canceled`, []error{context.Canceled}, []error{lockerr.ErrBusy}},
		// A cause that itself starts with "advisory: " is kept whole.
		{errors.New("advisory: something else"), `advisory: lock "job" on DB: advisory: something else`, nil, nil},
	} {
		err := lockError(d, "job", tc.err)
		want := strings.Replace(tc.want, " on DB", " on "+d.String(), 1)
		if got := err.Error(); got != want {
			t.Errorf("message\n got %s\nwant %s", got, want)
		}
		for _, m := range tc.matches {
			if !errors.Is(err, m) {
				t.Errorf("%v does not match %v", err, m)
			}
		}
		for _, m := range tc.excludes {
			if errors.Is(err, m) {
				t.Errorf("%v matches %v", err, m)
			}
		}
	}
	if n := strings.Count(lockError(d, "job", answer(ErrTimeout, " (x)")).Error(), "advisory: "); n != 1 {
		t.Errorf("\"advisory: \" appears %d times", n)
	}
}
