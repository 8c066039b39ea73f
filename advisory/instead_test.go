package advisory

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"
)

// TestSQLiteRefusalSaysWhatToUse: advisory locks on SQLite are refused
// before any SQL, naming the database and the feature, and saying what to
// use instead.
func TestSQLiteRefusalSaysWhatToUse(t *testing.T) {
	f := sqlServerFake(0, 0)
	lite := openFake(t, "sqlite", "", f)
	ctx := context.Background()
	_, acqErr := Acquire(ctx, lite, "i28-job")
	for name, err := range map[string]error{
		"With":    With(ctx, lite, "i28-job", func(*gorm.DB) error { return nil }),
		"Acquire": acqErr,
		"WithTx":  WithTx(lite, "i28-job"),
	} {
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("%s: %v, want ErrUnsupported", name, err)
		}
		for _, w := range []string{"SQLite", "advisory lock", "lease"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", name, err, w)
			}
		}
	}
	if opened, _ := f.counts(); opened != 0 || len(f.statements()) != 0 {
		t.Errorf("SQL was sent: %v", f.statements())
	}
}
