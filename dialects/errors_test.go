package dialects_test

import (
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
)

// TestNilErrorsDoNotPanic: a nil *UnsupportedError or *LockNotAvailableError
// (a typed nil that reached an error interface) prints its sentinel's
// message instead of panicking in a log line.
func TestNilErrorsDoNotPanic(t *testing.T) {
	for _, e := range []error{(*dialects.UnsupportedError)(nil), (*dialects.LockNotAvailableError)(nil)} {
		if e.Error() == "" {
			t.Errorf("%T(nil).Error() is empty", e)
		}
	}
}
