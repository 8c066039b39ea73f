package lockplugin_test

import (
	"context"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
)

// RetryOnConflict checks its input before it begins anything.
func TestRetryOnConflictInput(t *testing.T) {
	db := verOpen(t, "postgres")
	ctx := context.Background()
	ok := func(*gorm.DB) error { return nil }
	for name, err := range map[string]error{
		"no attempts": lockplugin.RetryOnConflict(ctx, db, 0, ok),
		"nil fn":      lockplugin.RetryOnConflict(ctx, db, 3, nil),
		"nil db":      lockplugin.RetryOnConflict(ctx, nil, 3, ok),
	} {
		if err == nil || !strings.Contains(err.Error(), "RetryOnConflict") {
			t.Errorf("%s: got %v", name, err)
		}
	}
}
