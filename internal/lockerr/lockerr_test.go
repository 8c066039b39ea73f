package lockerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestBusyMatchesItselfAndErrBusy(t *testing.T) {
	mine := Busy("mechanism: held")
	other := Busy("other: held")
	err := fmt.Errorf("call on x: %w", mine)
	if !errors.Is(err, mine) || !errors.Is(err, ErrBusy) {
		t.Fatalf("errors.Is(%v, own sentinel / ErrBusy) = %v / %v, want true / true", err, errors.Is(err, mine), errors.Is(err, ErrBusy))
	}
	if errors.Is(err, other) {
		t.Fatalf("a wrapped %q matched another mechanism's sentinel", mine)
	}
	if errors.Is(errors.New("lockplugin: held by someone else"), ErrBusy) {
		t.Fatal("a look-alike message matched ErrBusy")
	}
}
