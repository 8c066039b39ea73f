package clauses

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestErrRow: the *sql.Row made for a refused Row() reports exactly the
// refusal from Scan and Err, whatever the error wraps, and many of them
// leave nothing running.
func TestErrRow(t *testing.T) {
	for _, err := range []error{
		ErrNotInTransaction,
		fmt.Errorf("wrapped: %w", ErrInvalidLock),
		fmt.Errorf("even a bad connection: %w", driver.ErrBadConn),
	} {
		row := errRow(err)
		var n int
		if got := row.Scan(&n); !errors.Is(got, err) {
			t.Fatalf("Scan: want %v, got %v", err, got)
		}
		if got := row.Err(); !errors.Is(got, err) {
			t.Fatalf("Err: want %v, got nil", err)
		}
	}
	before := runtime.NumGoroutine()
	for i := 0; i < 1000; i++ {
		_ = errRow(ErrInvalidLock).Scan()
	}
	// Each pool's opener goroutine ends soon after Close.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+10 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+10 {
		t.Fatalf("%d goroutines after 1000 refused rows, %d before", n, before)
	}
}
