package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

func TestCheckCall(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name        string
		ctx         context.Context
		lock, owner string
		ttl         time.Duration
		want        string
	}{
		{"nil context", nil, "n", "o", 0, "nil context"},
		{"nil context first", nil, "", "", -1, "nil context"},
		{"empty name", ctx, "", "o", 0, "empty lock name"},
		{"empty name before owner", ctx, "", "", -1, "empty lock name"},
		{"empty owner", ctx, "n", "", 0, "empty owner"},
		{"empty owner before TTL", ctx, "n", "", -1, "empty owner"},
		{"negative TTL", ctx, "n", "o", -time.Second, "negative TTL -1s"},
		{"ok", ctx, "n", "o", time.Second, ""},
		{"no expiry", ctx, "n", "o", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := lease.CheckCall(tc.ctx, tc.lock, tc.owner, tc.ttl)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("CheckCall = %v, want nil", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("CheckCall = %v, want %q", err, tc.want)
			}
		})
	}
}
