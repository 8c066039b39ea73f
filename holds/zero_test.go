package holds

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/internal/lockerr"
)

// TestZeroValues: the zero Hold, a nil *Hold and a hand-built Hold without
// a *gorm.DB return errors naming what to use, never panic, and send
// nothing (the stand-in dialector has no connection).
func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	pg := open(t, "postgres")
	var nilHold *Hold
	calls := map[string]func() error{
		"nil (*Hold).Release":        func() error { return nilHold.Release(ctx) },
		"nil (*Hold).Extend":         func() error { return nilHold.Extend(ctx, time.Second) },
		"Hold{}.Release":             func() error { return (&Hold{}).Release(ctx) },
		"Hold{}.Extend":              func() error { return (&Hold{}).Extend(ctx, time.Second) },
		"holds.Release(nil)":         func() error { return Release(ctx, pg, nil) },
		"holds.Release(Hold{})":      func() error { return Release(ctx, pg, &Hold{}) },
		"holds.Extend(nil)":          func() error { return Extend(ctx, pg, nil, time.Second) },
		"holds.Extend(Hold{})":       func() error { return Extend(ctx, pg, &Hold{}, time.Second) },
		"hand-built (*Hold).Release": func() error { return (&Hold{ID: 3}).Release(ctx) },
		"hand-built (*Hold).Extend":  func() error { return (&Hold{ID: 3}).Extend(ctx, time.Second) },
		"Release on a nil db":        func() error { return Release(ctx, nil, &Hold{ID: 3}) },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "holds.Acquire") && !strings.Contains(msg, "holds.Release(ctx, db, h)") &&
			!strings.Contains(msg, "holds.Extend(ctx, db, h, ttl)") && !strings.Contains(msg, "nil *gorm.DB") {
			t.Errorf("%s: %q names nothing to use instead", name, msg)
		}
	}
}

// TestOptions: nil Options are ignored; invalid values are returned by the
// call, naming the option and the value; a nil Option does not reset the
// table a Hold remembers.
func TestOptions(t *testing.T) {
	ctx := context.Background()
	pg := open(t, "postgres")
	if c, err := newConfig([]Option{nil, TTL(time.Second), nil}); err != nil || c.ttl != time.Second || c.table != DefaultTable || c.tableSet {
		t.Fatalf("nil options: %+v, %v", c, err)
	}
	for _, c := range []struct {
		opt  Option
		want string
	}{{TTL(-time.Second), "holds.TTL(-1s)"}, {Table("a;b"), `holds.Table("a;b")`}} {
		_, err := Acquire(ctx, pg, &room{ID: 1}, "u", nil, c.opt)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Acquire with %s: %v", c.want, err)
		}
	}
	if _, err := ForceRelease(ctx, pg, "rooms", "1", "", Table("x y")); !errors.Is(err, ErrInvalid) {
		t.Errorf("ForceRelease with a bad table: %v", err)
	}
	for _, args := range [][3]string{{"", "1", ""}, {"rooms", "", ""}, {"rooms", "1", string([]byte{0xff})}} {
		if _, err := ForceRelease(ctx, pg, args[0], args[1], args[2]); !errors.Is(err, ErrInvalid) {
			t.Errorf("ForceRelease%q: %v, want ErrInvalid", args, err)
		}
	}
	// A nil option keeps the hold's own table (it used to reset it); the
	// DryRun stand-in is refused after the table is chosen, so read it back
	// from a session that is not DryRun.
	live := pg.Session(&gorm.Session{DryRun: false})
	live.DryRun = false
	h := &Hold{ID: 1, table: "mine"}
	c, err := holdCall(ctx, live, h, []Option{nil})
	if err != nil {
		t.Fatal(err)
	}
	defer c.done()
	if c.st.table != "mine" {
		t.Fatalf("table %q, want the hold's own", c.st.table)
	}
}

// TestErrFullIsBusy: ErrFull matches lockplugin.ErrBusy, wrapped as
// Acquire wraps it; ErrLost does not.
func TestErrFullIsBusy(t *testing.T) {
	err := errors.New("x")
	err = errors.Join(err, ErrFull)
	if !errors.Is(err, ErrFull) || !errors.Is(err, lockerr.ErrBusy) {
		t.Fatal("ErrFull does not match ErrBusy")
	}
	if errors.Is(ErrLost, lockerr.ErrBusy) || errors.Is(ErrLost, ErrNotActive) {
		t.Fatal("ErrLost matches another sentinel")
	}
}
