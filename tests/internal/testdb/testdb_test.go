package testdb

import (
	"context"
	"testing"
)

// TestReachable opens every database and runs one statement on each, so a
// broken harness shows up here rather than inside a suite.
func TestReachable(t *testing.T) {
	Each(t, func(t *testing.T, tg *Target) {
		var one int
		if err := tg.DB.Raw("SELECT 1").Scan(&one).Error; err != nil || one != 1 {
			t.Fatalf("%s: SELECT 1 = %d, %v", tg.Name, one, err)
		}
		if tg.Dialect.Kind == "" {
			t.Fatalf("%s: dialect not recognised", tg.Name)
		}
		t.Logf("%s: %s", tg.Name, tg.Dialect)
	})
	c := Redis(t)
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}
