package pgnotify

import (
	"context"
	"database/sql/driver"
	"strings"
	"testing"
)

// otherConn is a driver connection that is not pgx's.
type otherConn struct{ driver.Conn }

// wrapper wraps a driver connection and unwraps to it.
type wrapper struct{ inner driver.Conn }

func (w wrapper) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (w wrapper) Close() error                        { return nil }
func (w wrapper) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }
func (w wrapper) Unwrap() driver.Conn                 { return w.inner }

// TestReceiveOtherDriver: Receive on a connection that is not pgx's, bare
// or behind a wrapper that unwraps, fails at once and names the fix.
func TestReceiveOtherDriver(t *testing.T) {
	for _, c := range []any{otherConn{}, wrapper{otherConn{}}, nil} {
		_, _, err := Receive(context.Background(), c)
		if err == nil || !strings.Contains(err.Error(), "not pgx's database/sql driver") || !strings.Contains(err.Error(), "sqlstore.Listen") {
			t.Errorf("Receive on %T: %v, want an error naming pgx's driver and the fix", c, err)
		}
	}
}
