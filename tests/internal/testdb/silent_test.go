package testdb

import (
	"github.com/lockplugin/lockplugin/internal/silentserver"
	"net"
	"testing"
	"time"
)

// silentListener is silentserver.Start's port.
func silentListener(t *testing.T) string {
	_, port, _ := net.SplitHostPort(silentserver.Start(t))
	return port
}

// TestOpenSilentServer: opening a PostgreSQL or MySQL target on a port that
// accepts and never answers fails, instead of hanging the suite (GORM's
// MySQL dialector asks SELECT VERSION() with no deadline).
func TestOpenSilentServer(t *testing.T) {
	port := silentListener(t)
	for kind, dsn := range map[string]string{
		Postgres: "host=127.0.0.1 port=" + port + " user=postgres dbname=test sslmode=disable",
		MySQL:    "root:@tcp(127.0.0.1:" + port + ")/test?parseTime=true",
	} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			done := make(chan error, 1)
			go func() {
				tg, err := open(kind, dsn)
				if tg != nil {
					tg.closeAll()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("opened a server that never answers")
				}
				t.Log(err)
			case <-time.After(openTimeout + 5*time.Second):
				t.Fatalf("open still waiting after %v", openTimeout+5*time.Second)
			}
		})
	}
}
