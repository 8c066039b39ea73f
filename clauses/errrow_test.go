package clauses

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"
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
	for i := 0; i < 1000; i++ {
		_ = errRow(ErrInvalidLock).Scan()
	}
}
