package gocronlock_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/integrations/gocronlock"
)

// TestZeroValues: a zero or nil Locker and Elector answer with errors
// naming their constructors, and never panic.
func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	for name, l := range map[string]*gocronlock.Locker{"Locker{}": {}, "(*Locker)(nil)": nil} {
		if _, err := l.Lock(ctx, "i18-zero"); err == nil || !strings.Contains(err.Error(), "NewLocker") {
			t.Errorf("%s.Lock = %v, want an error naming NewLocker", name, err)
		}
	}
	for name, e := range map[string]*gocronlock.Elector{"Elector{}": {}, "(*Elector)(nil)": nil} {
		if err := e.IsLeader(ctx); err == nil || !strings.Contains(err.Error(), "NewElector") {
			t.Errorf("%s.IsLeader = %v, want an error naming NewElector", name, err)
		}
	}
	if err := (&gocronlock.Elector{}).Resign(ctx); err != nil {
		t.Errorf("Resign of a zero Elector, which leads nothing: %v", err)
	}
	if err := (*gocronlock.Elector)(nil).Resign(ctx); err == nil {
		t.Error("Resign of a nil *Elector: no error")
	}
}
