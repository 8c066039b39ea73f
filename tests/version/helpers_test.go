package version_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Small assertion helpers: the tests module does not carry testify's
// dependencies. Arguments follow testify's order (want before got).

func note(msg []string) string {
	if len(msg) == 0 {
		return ""
	}
	return " (" + strings.Join(msg, " ") + ")"
}

func must(t *testing.T, err error, msg ...string) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error%s: %v", note(msg), err)
	}
}

func mustFail(t *testing.T, err error, msg ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected an error%s, got nil", note(msg))
	}
}

func mustIs(t *testing.T, err, target error, msg ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error%s: got %v, want one that is %v", note(msg), err, target)
	}
}

func mustAs[T any](t *testing.T, err error, target *T) {
	t.Helper()
	if !errors.As(err, target) {
		t.Fatalf("error %v (%T) is not a %T", err, err, *target)
	}
}

func asInt(v any) (int64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(rv.Uint()), true
	}
	return 0, false
}

// eq compares integers of any kind by value, anything else deeply.
func eq(t *testing.T, want, got any, msg ...string) {
	t.Helper()
	if w, ok := asInt(want); ok {
		if g, ok := asInt(got); ok {
			if w != g {
				t.Errorf("got %d, want %d%s", g, w, note(msg))
			}
			return
		}
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("got %#v, want %#v%s", got, want, note(msg))
	}
}

func same(t *testing.T, want, got any, msg ...string) {
	t.Helper()
	if want != got {
		t.Errorf("got %p (%T), want the same pointer %p%s", got, got, want, note(msg))
	}
}

func isTrue(t *testing.T, cond bool, msg ...string) {
	t.Helper()
	if !cond {
		t.Errorf("expected true%s", note(msg))
	}
}

func isFalse(t *testing.T, cond bool, msg ...string) {
	t.Helper()
	if cond {
		t.Errorf("expected false%s", note(msg))
	}
}

func zero(t *testing.T, v any, msg ...string) {
	t.Helper()
	if rv := reflect.ValueOf(v); rv.IsValid() && !rv.IsZero() {
		t.Errorf("got %v, want zero%s", v, note(msg))
	}
}

func contains(t *testing.T, s, sub string, msg ...string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%q does not contain %q%s", s, sub, note(msg))
	}
}
