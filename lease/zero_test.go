package lease

import (
	"context"
	"strings"
	"testing"
)

// callZero runs fn and fails t, naming the method, if it panics or returns
// no error.
func callZero(t *testing.T, method string, fn func() error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s on the zero value panicked: %v", method, r)
		}
	}()
	if err := fn(); err == nil {
		t.Errorf("%s on the zero value returned no error", method)
	} else {
		t.Logf("%s: %v", method, err)
	}
}

func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	for name, m := range map[string]*Manager{"Manager{}": {}, "(*Manager)(nil)": nil} {
		callZero(t, name+".Acquire", func() error { _, err := m.Acquire(ctx, "i18_zero"); return err })
		callZero(t, name+".Do", func() error { return m.Do(ctx, "i18_zero", fn) })
	}
	for name, l := range map[string]*Lease{"Lease{}": {}, "(*Lease)(nil)": nil} {
		callZero(t, name+".Refresh", func() error { return l.Refresh(ctx, 0) })
		callZero(t, name+".Release", func() error { return l.Release(ctx) })
		callZero(t, name+".accessors", func() error {
			if l.Name() != "" || l.Owner() != "" || l.Fence() != 0 || l.TTL() != 0 || !l.Expiry().IsZero() {
				return nil
			}
			return l.Context().Err()
		})
		callZero(t, name+".Done", func() error {
			<-l.Done() // closed: a lease never taken is not held
			return context.Cause(l.Context())
		})
	}
	for name, s := range map[string]*LocalStore{"LocalStore{}": {}, "(*LocalStore)(nil)": nil} {
		callZero(t, name+".Acquire", func() error { _, _, err := s.Acquire(ctx, "i18_zero", "o", 0); return err })
		callZero(t, name+".Release", func() error { _, err := s.Release(ctx, "i18_zero", "o"); return err })
		callZero(t, name+".Refresh", func() error { _, err := s.Refresh(ctx, "i18_zero", "o", 0); return err })
		callZero(t, name+".Close", s.Close)
		if err := s.Close(); !strings.Contains(err.Error(), "lease.NewLocalStore") {
			t.Errorf("%s: %v does not name lease.NewLocalStore", name, err)
		}
		if d := s.Dir(); d != "" {
			t.Errorf("%s.Dir = %q", name, d)
		}
	}
	for name, e := range map[string]*NotAcquiredError{"NotAcquiredError{}": {}, "(*NotAcquiredError)(nil)": nil} {
		callZero(t, name+".Error", func() error {
			if e.Error() == "" || e.Unwrap() != nil || !e.Is(ErrNotAcquired) {
				return nil
			}
			return e // a non-nil error: the methods answered
		})
	}
}
