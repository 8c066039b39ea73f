package lockplugin_test

import (
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/internal/dryrun"
	"github.com/lockplugin/lockplugin/internal/lockerr"
)

// TestNilPluginOptionIgnored: a nil Option is ignored, as everywhere in
// lockplugin; the options beside it still apply.
func TestNilPluginOptionIgnored(t *testing.T) {
	db, err := dryrun.Open("sqlite", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Use(lockplugin.New(nil, lockplugin.SQLiteWriterLock(), nil)); err != nil {
		t.Fatalf("New with nil options: %v", err)
	}
	err = db.Transaction(func(tx *gorm.DB) error {
		return tx.Clauses(lockplugin.ForUpdate()).Find(&[]lkTask{}).Error
	})
	if errors.Is(err, lockplugin.ErrUnsupported) {
		t.Fatalf("SQLiteWriterLock beside nil options was not applied: %v", err)
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
