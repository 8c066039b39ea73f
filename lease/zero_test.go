package lease

import (
	"context"
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
		callZero(t, name+".Done", func() error {
			<-l.Done() // closed: a lease never taken is not held
			return context.Cause(l.Context())
		})
	}
}
