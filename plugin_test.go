package lockplugin_test

import (
	"errors"
	"testing"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/internal/dryrun"
	"github.com/lockplugin/lockplugin/internal/lockerr"
	"github.com/lockplugin/lockplugin/observe"
)

// TestNilPluginOptionIgnored: a nil Option is ignored, as everywhere in
// lockplugin; the options beside it still apply.
func TestNilPluginOptionIgnored(t *testing.T) {
	var o observe.Func = func(observe.Event) {}
	p := lockplugin.New(nil, lockplugin.WithObserver(o), nil)
	if p.Observer() == nil {
		t.Fatal("WithObserver beside nil options was not applied")
	}
	if lockplugin.New(nil, nil).Observer() != nil {
		t.Fatal("nil options set an observer")
	}
	db, err := dryrun.Open("postgres", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Use(lockplugin.New(nil, lockplugin.StrictVersion(), nil)); err != nil {
		t.Fatalf("registering a plugin made with nil options: %v", err)
	}
}

// TestErrBusyIsTheSharedSentinel: the root's ErrBusy is the one value the
// mechanisms' sentinels match, and ErrLockNotAvailable matches it.
func TestErrBusyIsTheSharedSentinel(t *testing.T) {
	if lockplugin.ErrBusy != lockerr.ErrBusy {
		t.Fatal("lockplugin.ErrBusy is not lockerr.ErrBusy")
	}
	if !errors.Is(lockplugin.ErrLockNotAvailable, lockplugin.ErrBusy) {
		t.Fatal("ErrLockNotAvailable does not match ErrBusy")
	}
}
