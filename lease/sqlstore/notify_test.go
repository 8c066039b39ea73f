package sqlstore

import (
	"strings"
	"testing"
)

// TestChannelName: the notification channel is the table's name while it
// fits PostgreSQL's 63 bytes (pg_notify refuses a longer one), and a
// fixed-length hash of it beyond, distinct per table.
func TestChannelName(t *testing.T) {
	if got := channelName("app.leases"); got != "app.leases" {
		t.Errorf("channelName(app.leases) = %q", got)
	}
	long1 := strings.Repeat("s", 63) + "." + strings.Repeat("t", 63)
	long2 := strings.Repeat("s", 63) + "." + strings.Repeat("u", 63)
	c1, c2 := channelName(long1), channelName(long2)
	if len(c1) > 63 || len(c2) > 63 || c1 == c2 || !strings.HasPrefix(c1, "lockplugin_") {
		t.Errorf("long tables: %q and %q, want distinct names of at most 63 bytes", c1, c2)
	}
}
