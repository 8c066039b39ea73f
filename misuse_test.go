package lockplugin_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin"
)

// TestNoKeyUpdateOnMariaDB: PostgreSQL's FOR NO KEY UPDATE on MariaDB is
// refused before any SQL, naming the database and the feature, and saying
// to use ForUpdate.
func TestNoKeyUpdateOnMariaDB(t *testing.T) {
	sql, err := lkSQL(lkOpen(t, "mysql", "10.11.6-MariaDB"), lockplugin.ForNoKeyUpdate())
	if !errors.Is(err, lockplugin.ErrUnsupported) {
		t.Fatalf("err %v, want ErrUnsupported", err)
	}
	for _, w := range []string{"FOR NO KEY UPDATE", "MariaDB 10.11.6", "use ForUpdate"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	if strings.Contains(sql, "FOR") {
		t.Errorf("a lock was rendered: %q", sql)
	}
}
