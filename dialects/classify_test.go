package dialects_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
)

// The fakes expose what the drivers expose. The MySQL and SQLite drivers
// are recognised by their package paths as well, which a fake cannot
// have: tests/locks classifies their real error types.

// pgError mimics *pgconn.PgError and *pq.Error.
type pgError struct{ state string }

func (e *pgError) Error() string    { return "pg: " + e.state }
func (e *pgError) SQLState() string { return e.state }

// msError mimics go-mssqldb's Error.
type msError struct{ number int32 }

func (e msError) Error() string         { return fmt.Sprintf("mssql: %d", e.number) }
func (e msError) SQLErrorNumber() int32 { return e.number }

// goOraError mimics go-ora's *network.OracleError.
type goOraError struct {
	ErrCode int
	ErrMsg  string
}

func (e *goOraError) Error() string { return e.ErrMsg }

// coded has a Code() method but comes from no known driver package.
type coded struct{ code int }

func (e coded) Error() string { return "coded" }
func (e coded) Code() int     { return e.code }

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("find jobs: %w", err) }
	for _, c := range []struct {
		name                string
		err                 error
		lockNotAvail, retry bool
	}{
		{"nil", nil, false, false},
		{"plain", errors.New("boom"), false, false},
		{"pg 55P03", &pgError{"55P03"}, true, false},
		{"pg 55P03 wrapped", wrap(&pgError{"55P03"}), true, false},
		{"pg 40001", &pgError{"40001"}, false, true},
		{"pg 40P01 joined", errors.Join(errors.New("rollback failed"), &pgError{"40P01"}), false, true},
		{"pg 23505", &pgError{"23505"}, false, false},
		{"mssql 1222", msError{1222}, true, false},
		{"mssql 1205", wrap(msError{1205}), false, true},
		{"mssql 3960", msError{3960}, false, true},
		{"mssql 2627", msError{2627}, false, false},
		{"ora message 54", errors.New("ORA-00054: resource busy and acquire with NOWAIT specified"), true, false},
		{"ora message 30006", wrap(errors.New("ORA-30006: resource busy; acquire with WAIT timeout expired")), true, false},
		{"ora message 60", errors.New("ORA-00060: deadlock detected while waiting for resource"), false, true},
		{"ora message 8177", errors.New("ORA-08177: can't serialize access for this transaction"), false, true},
		{"go-ora 54", &goOraError{ErrCode: 54, ErrMsg: "busy"}, true, false},
		{"go-ora 60", wrap(&goOraError{ErrCode: 60, ErrMsg: "deadlock"}), false, true},
		{"Code() from an unknown package", coded{5}, false, false},
	} {
		if got := dialects.IsLockNotAvailable(c.err); got != c.lockNotAvail {
			t.Errorf("%s: IsLockNotAvailable = %v, want %v", c.name, got, c.lockNotAvail)
		}
		if got := dialects.IsRetryable(c.err); got != c.retry {
			t.Errorf("%s: IsRetryable = %v, want %v", c.name, got, c.retry)
		}
	}
}

func TestWrapLockNotAvailable(t *testing.T) {
	d := dialects.New("postgres", "")
	if d.WrapLockNotAvailable(nil) != nil {
		t.Fatal("nil must stay nil")
	}
	other := &pgError{"40001"}
	if got := d.WrapLockNotAvailable(other); got != error(other) {
		t.Fatalf("a different error must come back unchanged, got %v", got)
	}

	driver := &pgError{"55P03"}
	err := d.WrapLockNotAvailable(fmt.Errorf("query: %w", driver))
	if !errors.Is(err, dialects.ErrLockNotAvailable) {
		t.Fatalf("%v does not match ErrLockNotAvailable", err)
	}
	var le *dialects.LockNotAvailableError
	if !errors.As(err, &le) || le.Dialect != "PostgreSQL" {
		t.Fatalf("want a *LockNotAvailableError naming PostgreSQL, got %#v", err)
	}
	var pe *pgError
	if !errors.As(err, &pe) || pe != driver {
		t.Fatal("the driver's error is not reachable")
	}
	if want := "lockplugin: lock not available on PostgreSQL: query: pg: 55P03"; err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
	if again := d.WrapLockNotAvailable(err); again != err {
		t.Fatal("wrapping twice must not nest")
	}
	if !dialects.IsLockNotAvailable(err) {
		t.Fatal("a wrapped error is still a lock-not-available error")
	}
}

// TestIsUndefinedTable: each database's "no such table", and near misses
// (a missing column, a duplicate key). MySQL's and SQLite's real errors
// are classified against their servers in cmd/lockcheck's doctor tests
// (a lease table that does not exist is no finding there).
func TestIsUndefinedTable(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", errors.New("no such table: t"), false},
		{"pg 42P01", fmt.Errorf("count: %w", &pgError{"42P01"}), true},
		{"pg 42703 (column)", &pgError{"42703"}, false},
		{"mssql 208", msError{208}, true},
		{"mssql 207 (column)", msError{207}, false},
		{"ora message 942", errors.New("ORA-00942: table or view does not exist"), true},
		{"go-ora 904 (column)", &goOraError{ErrCode: 904, ErrMsg: "invalid identifier"}, false},
	} {
		if got := dialects.IsUndefinedTable(c.err); got != c.want {
			t.Errorf("%s: IsUndefinedTable = %v, want %v", c.name, got, c.want)
		}
	}
}
